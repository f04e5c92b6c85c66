package preflight

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	scheduling "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/schema"
)

// accelerators checks that some node offers the accelerators a pod asks
// for (gpuResName, numGpusPerPod of them), and that one of those takes the
// pods: their nodeSelector and required node affinity match it, and they
// tolerate its taints, with the tolerations Kueue adds to them from the
// flavors of their ClusterQueue. Kueue admits a job
// on quota alone, and pods no node can hold stay Pending after it did.
// Nodes are read for a job that asks for accelerators, or names a
// nodeSelector.
func (k *checker) accelerators(ctx context.Context) {
	name := corev1.ResourceName(text(k.values, "gpuResName"))
	var each int64
	for _, ps := range k.job.PodSets {
		q := ps.Requests()[name]
		each = max(each, q.Value())
	}
	selector, _ := k.values["nodeSelector"].(map[string]any)
	if each == 0 && len(selector) == 0 || len(k.job.PodSets) == 0 {
		return
	}
	path := diag.Path{"numGpusPerPod"}
	placements, taintsKnown := k.placements(ctx)
	pod := &corev1.Pod{Spec: k.job.PodSets[0].Pod}
	var most int64
	offering, all, enough := 0, 0, 0
	unmatched, tainted := 0, map[string]int{}
	// A page at a time, until a node takes the pods: a large cluster's
	// nodes are many megabytes.
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := k.client.Dynamic.Resource(nodes).List(ctx, opts)
		if err != nil {
			what := fmt.Sprintf("the nodes that offer %s", name)
			if each == 0 {
				what = "the nodes that match nodeSelector"
				path = diag.Path{"nodeSelector"}
			}
			k.unchecked(path, what, cluster.Right{Verb: "list", Resource: nodes.GroupResource()}, err)
			return
		}
		for _, item := range list.Items {
			var node corev1.Node
			if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &node) != nil {
				continue
			}
			q := node.Status.Allocatable[name]
			if q.Value() > 0 {
				offering++
			}
			most = max(most, q.Value())
			if q.Value() < each {
				continue
			}
			enough++
			switch why := takes(pod, &node, placements, taintsKnown); {
			case why == "":
				return
			case why == notMatched:
				unmatched++
			default:
				tainted[why]++
			}
		}
		all += len(list.Items)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	switch {
	case enough == 0 && offering == 0:
		k.add(diag.Error, path, "no node of the cluster offers %s (of its %s): the pods would never be scheduled; check gpuResName (ask an administrator which accelerators the nodes have), or set numGpusPerPod: 0",
			name, schema.Count(all, "node"))
	case enough == 0:
		k.add(diag.Error, path, "each pod asks for %d %s, but no node offers more than %d (%s of %d): the pods would never be scheduled; ask for %d or fewer a pod, and more pods",
			each, name, most, schema.Count(offering, "node"), all, most)
	default:
		k.unplaced(each, name, enough, unmatched, tainted)
	}
}

// notMatched is why a node does not take the pods: their nodeSelector and
// node affinity do not match it.
const notMatched = "-"

// placement is what Kueue adds to the pods when it admits them to a
// flavor that lets them past taints: its tolerations. (Its node labels,
// which it adds as a nodeSelector, are left out: they only narrow where the
// pods go, and are the administrator's.)
type placement struct {
	tolerations []corev1.Toleration
}

// placements are those of the flavors of the job's ClusterQueue, one of
// which Kueue admits the job to; one that adds nothing without a queue.
// taintsKnown is false when the flavors could not be read: the pods may
// tolerate more than their settings say, and taints are not judged.
func (k *checker) placements(ctx context.Context) (out []placement, taintsKnown bool) {
	queue := k.job.Object.GetLabels()[cluster.QueueLabel]
	if queue == "" {
		return []placement{{}}, true
	}
	lq, err := k.get(ctx, k.client.Kueue(ctx, "localqueues"), k.namespace, queue)
	if err != nil {
		return []placement{{}}, false
	}
	cqName, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue")
	cq, err := k.get(ctx, k.client.Kueue(ctx, "clusterqueues"), "", cqName)
	if err != nil {
		return []placement{{}}, false
	}
	for _, flavor := range flavorNames(cq) {
		rf, err := k.get(ctx, k.client.Kueue(ctx, "resourceflavors"), "", flavor)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return []placement{{}}, false
		}
		var spec struct {
			Tolerations []corev1.Toleration `json:"tolerations"`
		}
		raw, _, _ := unstructured.NestedMap(rf.Object, "spec")
		if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec) != nil {
			return []placement{{}}, false
		}
		out = append(out, placement{tolerations: spec.Tolerations})
	}
	if len(out) == 0 {
		return []placement{{}}, true
	}
	return out, true
}

// takes says why a node does not take the pod under any placement: "" when
// it does, notMatched when its node selector and affinity do not match
// it, else the first taint it does not tolerate (as key=value:Effect). A
// cordoned node has the scheduler's taint node.kubernetes.io/unschedulable.
func takes(pod *corev1.Pod, node *corev1.Node, placements []placement, taintsKnown bool) string {
	taints := node.Spec.Taints
	if node.Spec.Unschedulable {
		taints = append(taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	if match, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !match {
		return notMatched
	}
	if !taintsKnown {
		return ""
	}
	var why string
	for _, p := range placements {
		tolerations := append(slices.Clip(pod.Spec.Tolerations), p.tolerations...)
		taint, untolerated := scheduling.FindMatchingUntoleratedTaint(klog.Background(), taints, tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
		if !untolerated {
			return ""
		}
		why = taint.ToString()
	}
	return why
}

// unplaced says that no node of those that offer the accelerators (enough
// of them) takes the pods: how many their node selector and affinity do
// not match, and which taints keep the others, at the setting to change.
func (k *checker) unplaced(each int64, name corev1.ResourceName, enough, unmatched int, tainted map[string]int) {
	of := fmt.Sprintf("the cluster's %s", schema.Count(enough, "node"))
	if each > 0 {
		of = fmt.Sprintf("the %s that offer %d %s", schema.Count(enough, "node"), each, name)
	}
	var reasons []string
	path := diag.Path{"tolerations"}
	if unmatched > 0 {
		var keys []string
		for _, key := range []string{"nodeSelector", "hostIgnoreList"} {
			if k.values[key] != nil {
				keys = append(keys, key)
			}
		}
		if len(keys) == 0 {
			keys = []string{"their affinity"}
		}
		if len(tainted) == 0 && k.values[keys[0]] != nil {
			// No node that matches them keeps them out by a taint.
			path = diag.Path{keys[0]}
		}
		reasons = append(reasons, fmt.Sprintf("%d do not match the pods' node selector and affinity (%s)", unmatched, strings.Join(keys, ", ")))
	}
	taints := make([]string, 0, len(tainted))
	for taint := range tainted {
		taints = append(taints, taint)
	}
	sort.Strings(taints)
	for _, taint := range taints {
		reasons = append(reasons, fmt.Sprintf("%d have the taint %s, which the pods do not tolerate", tainted[taint], taint))
	}
	k.add(diag.Error, path, "no node takes the job's pods: of %s, %s: the pods would never be scheduled; change %s (ask an administrator which labels and taints the nodes have)",
		of, strings.Join(reasons, ", and "), path)
}
