package preflight

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/schema"
)

// accelerators checks that some node offers the accelerators a pod asks
// for (gpuResName, numGpusPerPod of them): Kueue admits a job on quota
// alone, and pods no node can hold stay Pending after it did.
func (k *checker) accelerators(ctx context.Context) {
	name := corev1.ResourceName(text(k.values, "gpuResName"))
	var each int64
	for _, ps := range k.job.PodSets {
		q := ps.Requests()[name]
		each = max(each, q.Value())
	}
	if each == 0 {
		return
	}
	path := diag.Path{"numGpusPerPod"}
	// A page at a time, until a node offers enough: a large cluster's
	// nodes are many megabytes.
	var most int64
	offering, all := 0, 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := k.client.Dynamic.Resource(nodes).List(ctx, opts)
		if err != nil {
			k.unchecked(path, fmt.Sprintf("the nodes that offer %s", name), cluster.Right{Verb: "list", Resource: nodes.GroupResource()}, err)
			return
		}
		for _, item := range list.Items {
			var node corev1.Node
			if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &node) != nil {
				continue
			}
			q := node.Status.Allocatable[name]
			if q.Value() >= each {
				return
			}
			if q.Value() > 0 {
				offering++
			}
			most = max(most, q.Value())
		}
		all += len(list.Items)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if offering == 0 {
		k.add(diag.Error, path, "no node of the cluster offers %s (of its %s): the pods would never be scheduled; check gpuResName (ask an administrator which accelerators the nodes have), or set numGpusPerPod: 0",
			name, schema.Count(all, "node"))
		return
	}
	k.add(diag.Error, path, "each pod asks for %d %s, but no node offers more than %d (%s of %d): the pods would never be scheduled; ask for %d or fewer a pod, and more pods",
		each, name, most, schema.Count(offering, "node"), all, most)
}
