package preflight

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
)

// queue checks the LocalQueue the job names, and the ClusterQueue behind it:
// active, not held, and able to grant what the job requests.
func (k *checker) queue(ctx context.Context) {
	name := k.job.Object.GetLabels()[cluster.QueueLabel]
	if name == "" {
		return
	}
	path := diag.Path{"queueName"}
	localQueues, clusterQueues := k.client.Kueue(ctx, "localqueues"), k.client.Kueue(ctx, "clusterqueues")
	lq, err := k.get(ctx, localQueues, k.namespace, name)
	switch {
	case apierrors.IsNotFound(err) && !k.client.Serves(ctx, localQueues):
		k.add(diag.Error, path, "this cluster serves no LocalQueues (%s): Kueue is not installed, and nothing would queue the job; set queueName: null to submit it without a queue",
			localQueues.GroupVersion())
		return
	case apierrors.IsNotFound(err):
		list, closest := k.names(ctx, localQueues, k.namespace, name, nil)
		msg := fmt.Sprintf("no LocalQueue %q %s, and the job would wait for it forever", name, where(k.namespace))
		if list != "" {
			msg += " (" + list + ")"
		}
		if closest != "" {
			msg += fmt.Sprintf("; did you mean %q?", closest)
		} else {
			msg += "; name one that exists, or ask an administrator for one"
		}
		k.add(diag.Error, path, "%s", msg)
		return
	case err != nil:
		k.unchecked(path, fmt.Sprintf("LocalQueue %q %s", name, where(k.namespace)), cluster.Right{Verb: "get", Resource: localQueues.GroupResource(), Namespace: k.namespace}, err)
		return
	}
	if stop, _, _ := unstructured.NestedString(lq.Object, "spec", "stopPolicy"); stop != "" && stop != "None" {
		k.add(diag.Warning, path, "LocalQueue %q is stopped (stopPolicy: %s): Kueue admits nothing from it until an administrator resumes it", name, stop)
	}
	cqName, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue")
	cq, err := k.get(ctx, clusterQueues, "", cqName)
	behind := fmt.Sprintf("ClusterQueue %q (behind LocalQueue %q)", cqName, name)
	switch {
	case apierrors.IsNotFound(err):
		k.add(diag.Error, path, "LocalQueue %q points at ClusterQueue %q, which does not exist: the job would wait forever; ask an administrator to fix the queue, or name another", name, cqName)
		return
	case err != nil:
		k.unchecked(path, fmt.Sprintf("the quota of %s", behind), cluster.Right{Verb: "get", Resource: clusterQueues.GroupResource()}, err)
		return
	}
	if reason, inactive := inactive(cq); inactive {
		k.add(diag.Error, path, "%s is inactive (%s): Kueue admits nothing from it; ask an administrator, or name another LocalQueue", behind, reason)
	}
	if stop, _, _ := unstructured.NestedString(cq.Object, "spec", "stopPolicy"); stop != "" && stop != "None" {
		k.add(diag.Warning, path, "%s is stopped (stopPolicy: %s): Kueue admits nothing from it until an administrator resumes it", behind, stop)
	}
	k.quota(ctx, cq, behind)
	k.topology(ctx, cq, behind)
}

// topology checks that Kueue can place a job whose pods ask for one topology
// domain (topology: required or preferred): a flavor of the ClusterQueue
// names a Topology (Kueue's topology-aware scheduling) that has the level.
func (k *checker) topology(ctx context.Context, cq *unstructured.Unstructured, behind string) {
	asked, _ := k.values["topology"].(map[string]any)
	var mode, level string
	for m, l := range asked {
		mode = m
		level, _ = l.(string)
	}
	if level == "" {
		return
	}
	path := diag.Path{"topology", mode}
	var named []string
	for _, flavor := range flavorNames(cq) {
		rf, err := k.get(ctx, k.client.Kueue(ctx, "resourceflavors"), "", flavor)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				k.unchecked(path, fmt.Sprintf("ResourceFlavor %q of %s", flavor, behind), cluster.Right{Verb: "get", Resource: k.client.Kueue(ctx, "resourceflavors").GroupResource()}, err)
			}
			continue
		}
		if name, _, _ := unstructured.NestedString(rf.Object, "spec", "topologyName"); name != "" {
			named = append(named, name)
		}
	}
	if len(named) == 0 {
		// Preferred or required, Kueue admits a job that asks for a
		// topology only to a flavor that has one.
		k.add(diag.Error, path, "no ResourceFlavor of %s names a Topology: Kueue admits a job that asks for one %s only to a flavor with a Topology, and the job would wait forever; name a LocalQueue whose ClusterQueue schedules by topology, or remove topology", behind, level)
		return
	}
	var levels []string
	for _, name := range named {
		topo, err := k.get(ctx, k.client.Kueue(ctx, "topologies"), "", name)
		if err != nil {
			return // an older Kueue serves Topologies in another version: nothing to compare with
		}
		list, _, _ := unstructured.NestedSlice(topo.Object, "spec", "levels")
		for _, l := range list {
			label, _, _ := unstructured.NestedString(l.(map[string]any), "nodeLabel")
			if label == level {
				return
			}
			levels = append(levels, label)
		}
	}
	k.add(diag.Error, path, "Topology %q of %s has no level %s (its levels: %s): Kueue cannot place the job; name one of its levels", strings.Join(named, `", "`), behind, level, strings.Join(levels, ", "))
}

// flavorNames are the ResourceFlavors a ClusterQueue's quota is in.
func flavorNames(cq *unstructured.Unstructured) []string {
	var names []string
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	for _, g := range groups {
		flavors, _ := g.(map[string]any)["flavors"].([]any)
		for _, f := range flavors {
			if name, _ := f.(map[string]any)["name"].(string); name != "" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// inactive tells whether a ClusterQueue's Active condition is false, and why.
func inactive(cq *unstructured.Unstructured) (string, bool) {
	conditions, _, _ := unstructured.NestedSlice(cq.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] == "Active" && cond["status"] == "False" {
			return fmt.Sprintf("%v: %v", cond["reason"], cond["message"]), true
		}
	}
	return "", false
}

// quota compares what the job requests, resource by resource, with the most
// the ClusterQueue can ever grant: the nominal quota of every flavor that
// covers the resource, plus what it may borrow (its borrowing limit, or with
// none, the nominal quota of the rest of its cohort).
func (k *checker) quota(ctx context.Context, cq *unstructured.Unstructured, behind string) {
	requests := k.job.Requests()
	names := make([]string, 0, len(requests))
	for name, q := range requests {
		if !zero(q) {
			names = append(names, string(name))
		}
	}
	sort.Strings(names)
	for _, name := range names {
		need := requests[corev1.ResourceName(name)]
		limit, explain, covered := k.grantable(ctx, cq, name)
		path := k.resourcePath(name)
		switch {
		case !covered:
			k.add(diag.Error, path, "%s has no quota for %s, which the job requests (%s in all): Kueue will never admit it; ask an administrator to add %s to it, or name a LocalQueue whose ClusterQueue covers it",
				behind, name, k.perPod(name), name)
		case limit != nil && need.Cmp(*limit) > 0:
			k.add(diag.Error, path, "the job requests %s %s in all (%s), but %s can grant at most %s (%s): Kueue will never admit it; ask for less, or name a LocalQueue of a larger ClusterQueue",
				need.String(), name, k.perPod(name), behind, limit.String(), explain)
		}
	}
}

// grantable is the most of a resource a ClusterQueue can ever grant, nil
// when that cannot be known, with how it adds up; covered is false when none
// of its resource groups covers the resource.
func (k *checker) grantable(ctx context.Context, cq *unstructured.Unstructured, name string) (limit *resource.Quantity, explain string, covered bool) {
	cohort := cohortOf(cq)
	nominal, borrowing, unbounded, covered := quotaOf(cq, name)
	if !covered {
		return nil, "", false
	}
	total := nominal.DeepCopy()
	switch {
	case cohort == "" || (!unbounded && zero(borrowing)):
		return &total, "nominal " + nominal.String() + ", no borrowing", true
	case !unbounded:
		total.Add(borrowing)
		return &total, fmt.Sprintf("nominal %s, borrowing limit %s", nominal.String(), borrowing.String()), true
	}
	// No borrowing limit: at most what the whole cohort has. A Cohort
	// object of that name may hold quota of its own, and a parent cohort
	// more: then what the ClusterQueue may borrow is not worked out here.
	kueue := cq.GroupVersionKind().GroupVersion()
	if _, err := k.get(ctx, kueue.WithResource("cohorts"), "", cohort); !apierrors.IsNotFound(err) {
		return nil, "", true
	}
	list, err := k.client.Dynamic.Resource(kueue.WithResource("clusterqueues")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", true
	}
	others := resource.Quantity{}
	for _, other := range list.Items {
		if other.GetName() != cq.GetName() && cohortOf(&other) == cohort {
			n, _, _, _ := quotaOf(&other, name)
			others.Add(n)
		}
	}
	total.Add(others)
	return &total, fmt.Sprintf("nominal %s, and %s it may borrow in cohort %q", nominal.String(), others.String(), cohort), true
}

// cohortOf is a ClusterQueue's cohort: spec.cohort in Kueue's v1beta1,
// spec.cohortName in v1beta2.
func cohortOf(cq *unstructured.Unstructured) string {
	if cohort, _, _ := unstructured.NestedString(cq.Object, "spec", "cohortName"); cohort != "" {
		return cohort
	}
	cohort, _, _ := unstructured.NestedString(cq.Object, "spec", "cohort")
	return cohort
}

// quotaOf adds up a resource's quota over a ClusterQueue's flavors: nominal,
// borrowing limit, and whether some flavor has no borrowing limit.
func quotaOf(cq *unstructured.Unstructured, name string) (nominal, borrowing resource.Quantity, unbounded, covered bool) {
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	for _, g := range groups {
		group, _ := g.(map[string]any)
		flavors, _ := group["flavors"].([]any)
		for _, f := range flavors {
			flavor, _ := f.(map[string]any)
			resources, _ := flavor["resources"].([]any)
			for _, r := range resources {
				res, _ := r.(map[string]any)
				if res["name"] != name {
					continue
				}
				covered = true
				nominal.Add(parseQuantity(res["nominalQuota"]))
				if limit, ok := res["borrowingLimit"]; ok {
					borrowing.Add(parseQuantity(limit))
				} else {
					unbounded = true
				}
			}
		}
	}
	return nominal, borrowing, unbounded, covered
}

// parseQuantity reads a quantity as JSON holds it (a string or a number).
func parseQuantity(v any) resource.Quantity {
	q, err := resource.ParseQuantity(fmt.Sprint(v))
	if err != nil {
		return resource.Quantity{}
	}
	return q
}

// resourcePath is the setting that asks for a resource.
func (k *checker) resourcePath(name string) diag.Path {
	gdr := text(k.values, "roceGdrResName")
	if gdr == "" {
		gdr = "nvidia.com/roce_gdr"
	}
	switch name {
	case "cpu":
		return diag.Path{"numCpusPerPod"}
	case "memory":
		return diag.Path{"totalMemoryPerPod"}
	case text(k.values, "gpuResName"):
		return diag.Path{"numGpusPerPod"}
	case gdr:
		return diag.Path{"numRoceGdr"}
	}
	return diag.Path{"numPods"}
}

// perPod says how a resource's total adds up: "8 pods × 8" when every pod
// asks for the same, else how many pods.
func (k *checker) perPod(name string) string {
	var each *resource.Quantity
	same := true
	for _, ps := range k.job.PodSets {
		q := ps.Requests()[corev1.ResourceName(name)]
		if each == nil {
			each = &q
		} else if q.Cmp(*each) != 0 {
			same = false
		}
	}
	pods := k.job.Pods()
	if !same || each == nil {
		return fmt.Sprintf("%d pods", pods)
	}
	return fmt.Sprintf("%d pods × %s", pods, each.String())
}

// zero tells whether a quantity is nothing.
func zero(q resource.Quantity) bool { return q.Sign() == 0 }
