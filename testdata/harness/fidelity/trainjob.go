package fidelity

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// trainJobUnwrappable is why the checker refuses a TrainJob inside an
// AppWrapper (appwrapper #373).
const trainJobUnwrappable = "AppWrapper cannot wrap a TrainJob: a TrainJob embeds no pod template (its pods come from the training runtime), so AppWrapper can neither infer nor honour its podSets; submit it bare, with Kueue's queue label"

// trainJobPatchTemplates lists the pod templates that a TrainJob's
// runtimePatches carry. The trainer's PodTemplatePatch and PodSpecPatch are
// pod templates cut down to metadata and some PodSpec fields, with
// ContainerPatch a Container cut down the same way, every field with
// core/v1's name and type: so they decode strictly as core/v1 pod templates,
// and the fields core/v1 has that a patch may not carry are the CRD layer's
// to refuse. (The trainer's own Go types cannot be imported: its API package
// does not build against the Kubernetes libraries of this module.)
func trainJobPatchTemplates(obj map[string]any) []string {
	var paths []string
	patches, _, _ := unstructured.NestedSlice(obj, "spec", "runtimePatches")
	for i, p := range patches {
		patch, _ := p.(map[string]any)
		jobs, _, _ := unstructured.NestedSlice(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")
		for j, job := range jobs {
			job, _ := job.(map[string]any)
			if _, found, _ := unstructured.NestedMap(job, "template", "spec", "template"); found {
				paths = append(paths, fmt.Sprintf("template.spec.runtimePatches[%d].trainingRuntimeSpec.template.spec.replicatedJobs[%d].template.spec.template", i, j))
			}
		}
	}
	return paths
}
