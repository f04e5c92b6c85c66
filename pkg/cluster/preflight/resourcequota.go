package preflight

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/schema"
)

// resourceQuotas compares the job's pods (sets: with the LimitRanges'
// defaults), in all, with what each ResourceQuota of the namespace that
// counts them has left (its hard less its used), resource by resource:
// the API server refuses a pod that would pass a quota when its controller
// creates it, after Kueue admitted the job on the ClusterQueue's quota
// alone. More than the hard limit is an error: the job would never run
// whole. More than what is left now is a warning: the pods wait until
// other pods end. A quota of CPU or memory also refuses a container that
// does not ask for it.
func (k *checker) resourceQuotas(quotas []corev1.ResourceQuota, sets []cluster.PodSet) {
	for _, quota := range quotas {
		var counted []cluster.PodSet
		for _, ps := range sets {
			if quotaCounts(quota, ps) {
				counted = append(counted, ps)
			}
		}
		if len(counted) == 0 {
			continue
		}
		hard := quota.Status.Hard
		if len(hard) == 0 {
			hard = quota.Spec.Hard
		}
		names := make([]string, 0, len(hard))
		for name := range hard {
			names = append(names, string(name))
		}
		sort.Strings(names)
		what := fmt.Sprintf("ResourceQuota %q of namespace %q", quota.Name, k.namespace)
		for _, name := range names {
			need, path, ok := k.quotaNeed(corev1.ResourceName(name), counted)
			if !ok || zero(need) {
				continue
			}
			limit, used := hard[corev1.ResourceName(name)], quota.Status.Used[corev1.ResourceName(name)]
			left := limit.DeepCopy()
			left.Sub(used)
			switch {
			case need.Cmp(limit) > 0:
				k.add(diag.Error, path, "%s allows %s %s in all (hard), and the job's pods ask for %s (%s): the API server would refuse the pods beyond it when their controller creates them (exceeded quota: %s), after Kueue admitted the job, and the job would never run whole; ask for %s or less in all, or ask an administrator to raise the quota",
					what, limit.String(), name, need.String(), k.quotaPerPod(corev1.ResourceName(name), counted), quota.Name, limit.String())
			case need.Cmp(left) > 0:
				k.add(diag.Warning, path, "%s has %s %s left (hard %s, used %s), and the job's pods ask for %s (%s): the API server refuses the pods beyond it until other pods of the namespace end (exceeded quota: %s)",
					what, left.String(), name, limit.String(), used.String(), need.String(), k.quotaPerPod(corev1.ResourceName(name), counted), quota.Name)
			}
		}
		for _, missing := range unsaid(hard, counted) {
			k.add(diag.Error, missing.path, "%s counts %s, and the API server would refuse the job's pods, whose container %s does not ask for it (failed quota: %s: must specify %s); %s",
				what, missing.resource, missing.container, quota.Name, missing.resource, missing.fix)
		}
	}
}

// quotaNeed is what the job's pods of sets count against a quota's
// resource (cluster.QuotaUse), and the setting that asks for it.
func (k *checker) quotaNeed(name corev1.ResourceName, sets []cluster.PodSet) (resource.Quantity, diag.Path, bool) {
	need, ok := cluster.QuotaUse(name, sets)
	of := corev1.ResourceName(strings.TrimPrefix(string(name), "requests."))
	switch {
	case name == corev1.ResourcePods || name == "count/pods":
		return need, diag.Path{"numPods"}, ok
	case strings.HasPrefix(string(name), "limits."):
		return need, k.limitPath(corev1.ResourceName(strings.TrimPrefix(string(name), "limits."))), ok
	}
	return need, k.resourcePath(string(of)), ok
}

// quotaPerPod says how the job's count against a quota adds up: "4 pods ×
// 1", or how many pods when they differ.
func (k *checker) quotaPerPod(name corev1.ResourceName, sets []cluster.PodSet) string {
	var pods int64
	for _, ps := range sets {
		pods += ps.Count
	}
	if name == corev1.ResourcePods || name == "count/pods" {
		return schema.Count(int(pods), "pod")
	}
	var each *resource.Quantity
	for _, ps := range sets {
		need, _, _ := k.quotaNeed(name, []cluster.PodSet{{Count: 1, Meta: ps.Meta, Pod: ps.Pod}})
		if each != nil && need.Cmp(*each) != 0 {
			return schema.Count(int(pods), "pod")
		}
		each = &need
	}
	return fmt.Sprintf("%d pods × %s", pods, each.String())
}

// quotaCounts tells whether a quota counts the pods of a set: one without
// scopes counts every pod; each scope must select them. The job's pods
// have requests (NotBestEffort), no activeDeadlineSeconds (NotTerminating)
// and no cross-namespace affinity.
func quotaCounts(quota corev1.ResourceQuota, ps cluster.PodSet) bool {
	terminating := ps.Pod.ActiveDeadlineSeconds != nil
	bestEffort := len(ps.Requests()) == 0 && len(ps.Limits()) == 0
	match := func(scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values []string) bool {
		switch scope {
		case corev1.ResourceQuotaScopeTerminating:
			return terminating
		case corev1.ResourceQuotaScopeNotTerminating:
			return !terminating
		case corev1.ResourceQuotaScopeBestEffort:
			return bestEffort
		case corev1.ResourceQuotaScopeNotBestEffort:
			return !bestEffort
		case corev1.ResourceQuotaScopePriorityClass:
			class := ps.Pod.PriorityClassName
			switch op {
			case corev1.ScopeSelectorOpIn:
				return slices.Contains(values, class)
			case corev1.ScopeSelectorOpNotIn:
				return !slices.Contains(values, class)
			case corev1.ScopeSelectorOpExists:
				return class != ""
			case corev1.ScopeSelectorOpDoesNotExist:
				return class == ""
			}
		}
		return false
	}
	for _, scope := range quota.Spec.Scopes {
		// Written as a scope, PriorityClass selects a pod of any class.
		if !match(scope, corev1.ScopeSelectorOpExists, nil) {
			return false
		}
	}
	if s := quota.Spec.ScopeSelector; s != nil {
		for _, e := range s.MatchExpressions {
			if !match(e.ScopeName, e.Operator, e.Values) {
				return false
			}
		}
	}
	return true
}

// quotaComputeResources are the resources that a quota makes every
// container ask for, when it counts them.
var quotaComputeResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU,
	corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory}

// missingAsk is a container that does not ask for a resource a quota
// counts.
type missingAsk struct {
	resource, container, fix string
	path                     diag.Path
}

// unsaid are the containers (init containers too) that do not ask for a
// compute resource the quota counts (hard): the API server refuses their
// pods. Each resource and container once.
func unsaid(hard corev1.ResourceList, sets []cluster.PodSet) []missingAsk {
	var out []missingAsk
	seen := map[string]bool{}
	for _, name := range quotaComputeResources {
		if _, ok := hard[name]; !ok {
			continue
		}
		of, limits := corev1.ResourceName(strings.TrimPrefix(strings.TrimPrefix(string(name), "requests."), "limits.")), strings.HasPrefix(string(name), "limits.")
		for _, ps := range sets {
			for i, c := range slices.Concat(ps.Pod.InitContainers, ps.Pod.Containers) {
				has := c.Resources.Requests
				if limits {
					has = c.Resources.Limits
				}
				if _, ok := has[of]; ok || seen[string(name)+"/"+c.Name] {
					continue
				}
				seen[string(name)+"/"+c.Name] = true
				missing := missingAsk{resource: string(name), container: c.Name,
					fix: "ask an administrator for a LimitRange whose defaults give it, or for a quota that does not count it"}
				if i < len(ps.Pod.InitContainers) {
					missing.path = at("initContainers", i)
					missing.fix = "initContainers take no resources: remove it, or " + missing.fix
				}
				out = append(out, missing)
			}
		}
	}
	return out
}
