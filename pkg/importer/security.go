package importer

import (
	"maps"
	"reflect"
	"slices"
)

// The security context the chart writes (torchwrap.securityContext): the
// pod's fields of securityContext, and every container's.
var (
	podSecurityFields       = []string{"runAsUser", "runAsGroup", "fsGroup", "runAsNonRoot"}
	containerSecurityFields = []string{"allowPrivilegeEscalation"}
)

// restricted tells whether the pods are as podSecurity: restricted makes
// them: runAsNonRoot and the RuntimeDefault seccomp profile on the pod, and
// in every container no privilege escalation and every capability dropped.
func (r *reading) restricted() bool {
	pod := mapOf(r.spec["securityContext"])
	if pod["runAsNonRoot"] != true || str(dig(pod, "seccompProfile", "type")) != "RuntimeDefault" {
		return false
	}
	containers := append([]any{r.main}, list(r.spec["initContainers"])...)
	for _, c := range containers {
		sc := mapOf(dig(c, "securityContext"))
		if sc["allowPrivilegeEscalation"] != false || !slices.Contains(strs(dig(sc, "capabilities", "drop")), "ALL") {
			return false
		}
	}
	return true
}

// podSecurity is restricted when the pods meet it as the chart makes them;
// baseline sets nothing, and so is never read.
func readPodSecurity(r *reading) (any, bool) { return "restricted", r.restricted() }

// readSecurityContext reads the pod's security context and the training
// container's, but what podSecurity: restricted sets (when the pods are
// so) and the IPC_LOCK that numRoceGdr and the service account gdr add.
func readSecurityContext(r *reading) (any, bool) {
	restricted := r.restricted()
	pod := mapOf(r.spec["securityContext"])
	container := mapOf(r.main["securityContext"])
	out := map[string]any{}
	maps.Copy(out, pick(pod, podSecurityFields...).(map[string]any))
	maps.Copy(out, pick(container, containerSecurityFields...).(map[string]any))
	if profile := str(dig(pod, "seccompProfile", "type")); profile != "" {
		out["seccompProfile"] = profile
	}
	if drop := dig(container, "capabilities", "drop"); drop != nil {
		out["dropCapabilities"] = drop
	}
	if restricted {
		for key, implied := range map[string]any{"runAsNonRoot": true, "seccompProfile": "RuntimeDefault", "allowPrivilegeEscalation": false, "dropCapabilities": []any{"ALL"}} {
			if reflect.DeepEqual(out[key], implied) {
				delete(out, key)
			}
		}
	}
	return out, len(out) > 0
}

// ownInitSecurity tells whether an init container's security context is
// the one the chart gives every container: the training container's,
// without the capabilities it adds to that one alone.
func (r *reading) ownInitSecurity(sc any) bool {
	own := maps.Clone(mapOf(r.main["securityContext"]))
	if caps := maps.Clone(mapOf(own["capabilities"])); caps != nil {
		delete(caps, "add")
		own["capabilities"] = caps
		if len(caps) == 0 {
			delete(own, "capabilities")
		}
	}
	return reflect.DeepEqual(mapOf(sc), own)
}
