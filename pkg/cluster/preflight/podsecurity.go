package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	psa "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
)

// enforceLabel is the namespace's label of the Pod Security level its pods
// must meet.
const enforceLabel = psa.EnforceLevelLabel

// podSecurity evaluates every pod template of the job at the Pod Security
// level the namespace enforces (its labels, as the API server reads them),
// with the Kubernetes project's own evaluator at the API server's version,
// so that check says what the API server would say, word for word. The
// API server refuses the pods when their controller creates them, after
// Kueue admitted the job. A level the cluster's admission configuration
// sets by default, without a label, is not seen here: the dry run of the
// pods (where the role allows it) sees it.
func (k *checker) podSecurity(ctx context.Context) {
	path := diag.Path{"podSecurity"}
	ns, err := k.get(ctx, namespaces, "", k.namespace)
	if err != nil {
		k.unchecked(path, fmt.Sprintf("the Pod Security level of namespace %q (its labels)", k.namespace), cluster.Right{Verb: "get", Resource: namespaces.GroupResource(), Namespace: k.namespace}, err)
		return
	}
	privileged := psa.LevelVersion{Level: psa.LevelPrivileged, Version: psa.LatestVersion()}
	nsPolicy, _ := psa.PolicyToEvaluate(ns.GetLabels(), psa.Policy{Enforce: privileged, Audit: privileged, Warn: privileged})
	if nsPolicy.Enforce.Level == psa.LevelPrivileged {
		return
	}
	emulated := k.serverVersion()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), emulated)
	if err != nil {
		k.add(diag.Unchecked, path, "the Pod Security level of namespace %q: %v", k.namespace, err)
		return
	}
	said := map[string]bool{}
	say := func(path diag.Path, results []policy.CheckResult, fix string) {
		aggregate := policy.AggregateCheckResults(results)
		words := fmt.Sprintf("violates PodSecurity %q: %s", nsPolicy.Enforce.String(), aggregate.ForbiddenDetail())
		if said[path.String()+words] {
			return
		}
		said[path.String()+words] = true
		k.add(diag.Error, path, "namespace %q enforces Pod Security %s (its label %s), and the API server would refuse the job's pods when their controller creates them, after Kueue admitted the job: %s; %s",
			k.namespace, nsPolicy.Enforce.Level, enforceLabel, words, fix)
	}
	refused := func(pod *cluster.PodSet) []policy.CheckResult {
		var out []policy.CheckResult
		for _, r := range evaluator.EvaluatePod(nsPolicy.Enforce, &pod.Meta, &pod.Pod) {
			if !r.Allowed {
				out = append(out, r)
			}
		}
		return out
	}
	made, adds, fix := k.job.Made()
	for i, ps := range k.job.PodSets {
		ids := checkIDs(nsPolicy.Enforce, emulated, &ps)
		groups := map[string][]policy.CheckResult{}
		var order []string
		for _, r := range refused(&ps) {
			key := k.securityPath(ids[r.ForbiddenReason], ps.Pod).String()
			if _, ok := groups[key]; !ok {
				order = append(order, key)
			}
			groups[key] = append(groups[key], r)
		}
		for _, key := range order {
			path := diag.ParsePath(key)
			say(path, groups[key], k.securityFix(path, nsPolicy.Enforce.Level))
		}
		// What the settings make meets the level: what the job's
		// controller adds to its pods may not.
		if len(order) == 0 && adds != "" {
			if results := refused(&made[i]); len(results) > 0 {
				say(diag.Path{"jobKind"}, results, adds+"; "+fix)
			}
		}
	}
}

// serverVersion is the API server's version, which the Pod Security
// checks of "latest" are those of; nil when it does not say.
func (k *checker) serverVersion() *psa.Version {
	versions, ok := k.client.Discovery.(discovery.ServerVersionInterface)
	if !ok {
		return nil
	}
	info, err := versions.ServerVersion()
	if err != nil {
		return nil
	}
	v, err := psa.ParseVersion(fmt.Sprintf("v%s.%s", info.Major, strings.TrimSuffix(info.Minor, "+")))
	if err != nil {
		return nil
	}
	return &v
}

// checkIDs tells, by its reason, which check of the level refuses the pod:
// each check run alone, at the newest of its versions the level's version
// takes.
func checkIDs(level psa.LevelVersion, emulated *psa.Version, ps *cluster.PodSet) map[string]policy.CheckID {
	version := level.Version
	if emulated != nil && (version.Latest() || emulated.Older(version)) {
		version = *emulated
	}
	ids := map[string]policy.CheckID{}
	for _, c := range policy.DefaultChecks() {
		if c.Level == psa.LevelRestricted && level.Level != psa.LevelRestricted {
			continue
		}
		var check policy.CheckPodFn
		for _, v := range c.Versions {
			if version.Latest() || !version.Older(v.MinimumVersion) {
				check = v.CheckPod
			}
		}
		if check == nil {
			continue
		}
		if r := check(&ps.Meta, &ps.Pod); !r.Allowed {
			if _, ok := ids[r.ForbiddenReason]; !ok || c.Level == psa.LevelRestricted {
				ids[r.ForbiddenReason] = c.ID
			}
		}
	}
	return ids
}

// The checks the settings answer for, by what they set: the security
// context (podSecurity, securityContext) and IPC_LOCK (numRoceGdr, the
// service account gdr).
var (
	levelChecks = []policy.CheckID{"allowPrivilegeEscalation", "runAsNonRoot", "seccompProfile_restricted", "capabilities_restricted"}
	addedChecks = []policy.CheckID{"capabilities_baseline"}
)

// securityPath is the setting that makes a pod fail a Pod Security check:
// podSecurity for what it would set; numRoceGdr (or serviceAccountName)
// for the IPC_LOCK they add; securityContext's own keys; nil for what no
// setting makes.
func (k *checker) securityPath(id policy.CheckID, pod corev1.PodSpec) diag.Path {
	addsIPCLock := slices.ContainsFunc(pod.Containers, func(c corev1.Container) bool {
		return c.SecurityContext != nil && c.SecurityContext.Capabilities != nil && slices.Contains(c.SecurityContext.Capabilities.Add, "IPC_LOCK")
	})
	switch {
	case slices.Contains(addedChecks, id) || id == "capabilities_restricted" && addsIPCLock && text(k.values, "podSecurity") == "restricted":
		if n, _ := k.values["numRoceGdr"].(float64); n > 0 {
			return diag.Path{"numRoceGdr"}
		}
		return diag.Path{"serviceAccountName"}
	case slices.Contains(levelChecks, id):
		return diag.Path{"podSecurity"}
	case id == "runAsUser":
		return diag.Path{"securityContext", "runAsUser"}
	case id == "seccompProfile_baseline":
		return diag.Path{"securityContext", "seccompProfile"}
	case id == "restrictedVolumes" || id == "hostPathVolumes":
		return diag.Path{"volumes"}
	case id == "appArmorProfile":
		return diag.Path{"podAnnotations"}
	}
	return nil
}

// securityFix says how to meet the level, at the setting that fails it.
func (k *checker) securityFix(path diag.Path, level psa.Level) string {
	switch path.String() {
	case "podSecurity":
		fix := fmt.Sprintf("set podSecurity: %s, which sets what the level needs (generator explain podSecurity)", level)
		if n, _ := k.values["numRoceGdr"].(float64); n > 0 {
			fix += ", and numRoceGdr: 0, whose IPC_LOCK the level refuses"
		} else if text(k.values, "serviceAccountName") == "gdr" {
			fix += ", and another service account than gdr, whose IPC_LOCK the level refuses"
		}
		return fix
	case "numRoceGdr":
		return "RoCE GDR needs the IPC_LOCK capability, which the level refuses: set numRoceGdr: 0, or ask an administrator for a namespace whose level is privileged"
	case "serviceAccountName":
		return "the service account gdr grants IPC_LOCK, which the level refuses: name another, or ask an administrator for a namespace whose level is privileged"
	case "securityContext.runAsUser":
		return "name a user other than root (0), or leave it out"
	case "securityContext.seccompProfile":
		return "set RuntimeDefault, or leave it out"
	}
	return "ask an administrator what the namespace's level allows"
}
