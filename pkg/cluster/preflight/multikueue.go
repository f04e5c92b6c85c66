package preflight

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
)

// multiKueue is how a MultiKueue manager dispatches the job: the admission
// check of its ClusterQueue that MultiKueue runs, and its MultiKueueConfig,
// which names the worker clusters.
type multiKueue struct {
	check, config string
}

// podsOnly are the kinds of objects that only the job's pods need: on a
// MultiKueue manager, which makes no pods, they are looked for on the
// workers.
var podsOnly = map[schema.GroupVersionResource]bool{
	claims: true, secrets: true, configMaps: true, serviceAccounts: true, storageClasses: true, networks: true,
}

// dispatch reads whether the job's queue is a MultiKueue manager's: its
// ClusterQueue has an admission check of MultiKueue's controller. nil when
// it is not, or when the queue cannot be read (queue says why).
func (k *checker) dispatch(ctx context.Context) *multiKueue {
	name := k.job.Object.GetLabels()[cluster.QueueLabel]
	if name == "" {
		return nil
	}
	lq, err := k.get(ctx, k.client.Kueue(ctx, "localqueues"), k.namespace, name)
	if err != nil {
		return nil
	}
	cqName, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue")
	cq, err := k.get(ctx, k.client.Kueue(ctx, "clusterqueues"), "", cqName)
	if err != nil {
		return nil
	}
	for _, check := range admissionChecks(cq) {
		ac, err := k.get(ctx, k.client.Kueue(ctx, "admissionchecks"), "", check)
		if err != nil {
			continue
		}
		controller, _, _ := unstructured.NestedString(ac.Object, "spec", "controllerName")
		if controller != cluster.MultiKueueController {
			continue
		}
		mk := &multiKueue{check: check}
		mk.config, _, _ = unstructured.NestedString(ac.Object, "spec", "parameters", "name")
		return mk
	}
	return nil
}

// admissionChecks are the names of a ClusterQueue's admission checks:
// spec.admissionChecks, or spec.admissionChecksStrategy.
func admissionChecks(cq *unstructured.Unstructured) []string {
	names, _, _ := unstructured.NestedStringSlice(cq.Object, "spec", "admissionChecks")
	strategy, _, _ := unstructured.NestedSlice(cq.Object, "spec", "admissionChecksStrategy", "admissionChecks")
	for _, s := range strategy {
		if m, ok := s.(map[string]any); ok {
			if name, ok := m["name"].(string); ok {
				names = append(names, name)
			}
		}
	}
	return names
}

// workers checks the worker clusters that MultiKueue may dispatch the job
// to: which are Active, and, on each the user can reach, what Check checks
// on one cluster. A worker that could never run the job is named with why;
// that is an error only when no worker could. A worker the user cannot
// reach is said once, as not checked.
func (k *checker) workers(ctx context.Context, mk *multiKueue) {
	path := diag.Path{"queueName"}
	behind := fmt.Sprintf("MultiKueue admission check %q", mk.check)
	config, err := k.get(ctx, k.client.Kueue(ctx, "multikueueconfigs"), "", mk.config)
	switch {
	case apierrors.IsNotFound(err):
		k.add(diag.Error, path, "%s names MultiKueueConfig %q, which does not exist: the job would wait forever; ask an administrator to fix it", behind, mk.config)
		return
	case err != nil:
		k.unchecked(path, fmt.Sprintf("the worker clusters of %s", behind), cluster.Right{Verb: "get", Resource: schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "multikueueconfigs"}}, err)
		return
	}
	names, _, _ := unstructured.NestedStringSlice(config.Object, "spec", "clusters")
	var active, inactive []string
	for _, name := range names {
		why := "it has no MultiKueueCluster"
		mkc, err := k.get(ctx, k.client.Kueue(ctx, "multikueueclusters"), "", name)
		switch {
		case err == nil:
			why = notActive(mkc)
		case !apierrors.IsNotFound(err):
			k.unchecked(path, fmt.Sprintf("worker cluster %s of %s", name, behind), cluster.Right{Verb: "get", Resource: schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "multikueueclusters"}}, err)
			continue
		}
		if why == "" {
			active = append(active, name)
		} else {
			inactive = append(inactive, fmt.Sprintf("%s (%s)", name, why))
		}
	}
	if len(active) == 0 {
		k.add(diag.Error, path, "no worker cluster of %s is Active (%s): MultiKueue dispatches the job to none, and it would wait until one is; ask an administrator",
			behind, strings.Join(inactive, "; "))
		return
	}
	for _, w := range inactive {
		k.add(diag.Warning, path, "worker cluster %s of %s is not Active: MultiKueue dispatches jobs only to %s", w, behind, strings.Join(active, ", "))
	}
	// Each Active worker the user reaches, checked as one cluster.
	found := map[string]diag.List{}
	unreached := 0
	for _, name := range active {
		client, _, err := k.client.ReachWorker(ctx, name)
		if err == nil {
			var list diag.List
			if list, err = checkOn(ctx, client, k.job, k.values, true); err == nil {
				found[name] = list
				continue
			}
		}
		unreached++
		if errors.As(err, &cluster.NoWorkerContext{}) {
			k.add(diag.Unchecked, path, "%v", err)
		} else {
			k.add(diag.Unchecked, path, "worker cluster %s: %v", name, err)
		}
	}
	able := unreached
	for _, list := range found {
		if !slices.ContainsFunc(list, func(d diag.Diagnostic) bool { return d.Severity == diag.Error }) {
			able++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(found)) {
		for _, f := range found[name] {
			switch {
			case f.Severity == diag.Error && able > 0:
				k.add(diag.Warning, f.Path, "worker cluster %s could never run the job: %s", name, f.Message)
			default:
				k.add(f.Severity, f.Path, "on worker cluster %s: %s", name, f.Message)
			}
		}
	}
}

// notActive says why a MultiKueueCluster is not Active: "" when it is.
func notActive(mkc *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(mkc.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] != "Active" {
			continue
		}
		if cond["status"] == "True" {
			return ""
		}
		return fmt.Sprintf("%v: %v", cond["reason"], cond["message"])
	}
	return "Kueue has not said it is Active yet"
}
