package preflight

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
)

// limitRanges checks the job's pods against the namespace's LimitRanges as
// the API server's LimitRanger does when their controller creates them:
// first every LimitRange's defaults (a default limit, a default request)
// go into each container that does not say its own; then each container
// (init containers too) must keep within each Container item's min, max
// and maxLimitRequestRatio, and each pod within each Pod item's. A
// default limit below a container's request is refused too, by the pod's
// validation. (The chart gives the training container its limits: the
// defaults reach the init containers, and the resources the chart does
// not set.) It gives the pod sets with the defaults in, which the
// ResourceQuotas count.
func (k *checker) limitRanges(ranges []corev1.LimitRange) []cluster.PodSet {
	said := map[string]bool{}
	say := func(path diag.Path, lr corev1.LimitRange, v violation) {
		if said[path.String()+v.refusal] {
			return
		}
		said[path.String()+v.refusal] = true
		k.add(diag.Error, path, "LimitRange %q of namespace %q: the API server would refuse the job's pods when their controller creates them, after Kueue admitted the job: %s; %s",
			lr.Name, k.namespace, v.refusal, v.fix)
	}
	sets := make([]cluster.PodSet, len(k.job.PodSets))
	for i, ps := range k.job.PodSets {
		ps.Pod = *ps.Pod.DeepCopy()
		for _, lr := range ranges {
			for _, item := range lr.Spec.Limits {
				if item.Type != corev1.LimitTypeContainer {
					continue
				}
				for j := range len(ps.Pod.InitContainers) + len(ps.Pod.Containers) {
					c := container(&ps.Pod, j)
					for _, v := range defaults(c, item) {
						say(k.boundPath(v, j < len(ps.Pod.InitContainers), j), lr, v)
					}
				}
			}
		}
		sets[i] = ps
	}
	for _, ps := range sets {
		for _, lr := range ranges {
			for _, item := range lr.Spec.Limits {
				switch item.Type {
				case corev1.LimitTypeContainer:
					for j := range len(ps.Pod.InitContainers) + len(ps.Pod.Containers) {
						c := container(&ps.Pod, j)
						for _, v := range bounds(item, string(corev1.LimitTypeContainer), c.Resources.Requests, c.Resources.Limits) {
							say(k.boundPath(v, j < len(ps.Pod.InitContainers), j), lr, v)
						}
					}
				case corev1.LimitTypePod:
					for _, v := range bounds(item, string(corev1.LimitTypePod), ps.Requests(), ps.Limits()) {
						say(k.boundPath(v, false, 0), lr, v)
					}
				}
			}
		}
	}
	return sets
}

// container is a pod's init containers, then its containers, by index.
func container(pod *corev1.PodSpec, i int) *corev1.Container {
	if i < len(pod.InitContainers) {
		return &pod.InitContainers[i]
	}
	return &pod.Containers[i-len(pod.InitContainers)]
}

// defaults gives a container a LimitRange item's default limits and
// requests of the resources it does not say; and says a default limit
// below the container's own request, which the pod's validation refuses.
func defaults(c *corev1.Container, item corev1.LimitRangeItem) []violation {
	var out []violation
	for _, name := range sortedNames(item.Default) {
		limit := item.Default[name]
		if _, ok := c.Resources.Limits[name]; ok {
			continue
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[name] = limit.DeepCopy()
		if request, ok := c.Resources.Requests[name]; ok && request.Cmp(limit) > 0 {
			out = append(out, violation{name, false,
				fmt.Sprintf("its default limit of %s, %s, goes into container %q, which asks for %s (must be less than or equal to %s limit of %s)", name, limit.String(), c.Name, request.String(), name, limit.String()),
				fmt.Sprintf("ask for %s or less, or set the limit yourself", limit.String())})
		}
	}
	for _, name := range sortedNames(item.DefaultRequest) {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[name] = item.DefaultRequest[name].DeepCopy()
		}
	}
	return out
}

// violation is one bound of a LimitRange that a container or pod passes:
// the API server's words, the resource, and whether its limit (or its
// request) is at fault.
type violation struct {
	resource     corev1.ResourceName
	limit        bool
	refusal, fix string
}

// bounds are the bounds of a LimitRange item that what a container (or a
// pod) requests and limits passes, in the LimitRanger's words.
func bounds(item corev1.LimitRangeItem, of string, requests, limits corev1.ResourceList) []violation {
	var out []violation
	for _, name := range sortedNames(item.Min) {
		bound := item.Min[name]
		request, hasRequest := requests[name]
		limit, hasLimit := limits[name]
		switch {
		case !hasRequest:
			out = append(out, violation{name, false, fmt.Sprintf("minimum %s usage per %s is %s.  No request is specified", name, of, bound.String()), "ask for it"})
		case request.Cmp(bound) < 0:
			out = append(out, violation{name, false, fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", name, of, bound.String(), request.String()), fmt.Sprintf("ask for %s or more", bound.String())})
		case hasLimit && limit.Cmp(bound) < 0:
			out = append(out, violation{name, true, fmt.Sprintf("minimum %s usage per %s is %s, but limit is %s", name, of, bound.String(), limit.String()), fmt.Sprintf("set a limit of %s or more", bound.String())})
		}
	}
	for _, name := range sortedNames(item.Max) {
		bound := item.Max[name]
		request, hasRequest := requests[name]
		limit, hasLimit := limits[name]
		less := fmt.Sprintf("ask for %s or less, or ask an administrator to raise the LimitRange", bound.String())
		switch {
		case !hasLimit:
			out = append(out, violation{name, true, fmt.Sprintf("maximum %s usage per %s is %s.  No limit is specified", name, of, bound.String()), less})
		case limit.Cmp(bound) > 0:
			out = append(out, violation{name, true, fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", name, of, bound.String(), limit.String()), less})
		case hasRequest && request.Cmp(bound) > 0:
			out = append(out, violation{name, false, fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", name, of, bound.String(), request.String()), less})
		}
	}
	for _, name := range sortedNames(item.MaxLimitRequestRatio) {
		bound := item.MaxLimitRequestRatio[name]
		request, limit := requests[name], limits[name]
		if request.IsZero() || limit.IsZero() {
			continue
		}
		ratio := float64(limit.MilliValue()) / float64(request.MilliValue())
		if ratio*1000 > float64(bound.MilliValue()) {
			out = append(out, violation{name, true, fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, of, bound.String(), ratio),
				fmt.Sprintf("keep the limit within %s times the request", bound.String())})
		}
	}
	return out
}

// boundPath is the setting of a container's (or pod's) resource that a
// LimitRange refuses: an init container's own entry; the training
// container's request or limit.
func (k *checker) boundPath(v violation, init bool, index int) diag.Path {
	switch {
	case init:
		return at("initContainers", index)
	case v.limit:
		return k.limitPath(v.resource)
	}
	return k.resourcePath(string(v.resource))
}

// limitPath is the setting of the training container's limit of a
// resource: limitCpusPerPod and limitMemoryPerPod when set, else the
// request's, which the limit follows.
func (k *checker) limitPath(name corev1.ResourceName) diag.Path {
	for resource, key := range map[corev1.ResourceName]string{corev1.ResourceCPU: "limitCpusPerPod", corev1.ResourceMemory: "limitMemoryPerPod"} {
		if name == resource && k.values[key] != nil {
			return diag.Path{key}
		}
	}
	return k.resourcePath(string(name))
}

// sortedNames are a resource list's names, in order.
func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
