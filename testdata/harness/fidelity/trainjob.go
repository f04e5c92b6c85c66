package fidelity

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsyaml "sigs.k8s.io/yaml"
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

// torchRunReservedEnv are the variables the trainer's torch plugin sets and
// refuses in spec.trainer.env.
var torchRunReservedEnv = []string{"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}

// trainingRuntime is what the trainer's webhook reads of a
// ClusterTrainingRuntime: whether it runs torch, and the containers and init
// containers of each replicated job.
type trainingRuntime struct {
	torch      bool
	containers map[string][]string
}

func parseTrainingRuntime(data []byte) (string, trainingRuntime, error) {
	var obj map[string]any
	if err := sigsyaml.Unmarshal(data, &obj); err != nil {
		return "", trainingRuntime{}, fmt.Errorf("training runtime: %w", err)
	}
	_, torch, _ := unstructured.NestedMap(obj, "spec", "mlPolicy", "torch")
	rt := trainingRuntime{torch: torch, containers: map[string][]string{}}
	jobs, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", "replicatedJobs")
	for _, j := range jobs {
		job, _ := j.(map[string]any)
		name, _, _ := unstructured.NestedString(job, "name")
		for _, list := range []string{"initContainers", "containers"} {
			containers, _, _ := unstructured.NestedSlice(job, "template", "spec", "template", "spec", list)
			for _, c := range containers {
				container, _ := c.(map[string]any)
				cname, _, _ := unstructured.NestedString(container, "name")
				rt.containers[name] = append(rt.containers[name], cname)
			}
		}
	}
	return nameOf(obj), rt, nil
}

// trainJobWebhook restates the create rules of the trainer's TrainJob
// webhook that need no cluster: the webhook itself validates through a
// runtime built on a client of a running cluster, and the trainer's Go
// packages do not build against this module's Kubernetes libraries (its
// generated OpenAPI refers to core/v1 PodStatusResult, which k8s.io/api
// v0.37 dropped), so the simulated cluster runs the real one. runtimes are
// the ClusterTrainingRuntimes known here, by name; a TrainJob on another is
// held to the rules that need no runtime.
type trainJobWebhook struct {
	runtimes map[string]trainingRuntime
}

// check applies the rules to obj as the API server hands it to the webhook
// (CRD.Admit: runtimeRef's kind defaulted).
func (w trainJobWebhook) check(name string, obj map[string]any) Findings {
	var errs field.ErrorList
	patchesPath := field.NewPath("spec", "runtimePatches")
	kind, _, _ := unstructured.NestedString(obj, "spec", "runtimeRef", "kind")
	runtimeName, _, _ := unstructured.NestedString(obj, "spec", "runtimeRef", "name")
	rt, known := w.runtimes[runtimeName]
	known = known && kind == "ClusterTrainingRuntime"
	if known && rt.torch {
		env, _, _ := unstructured.NestedSlice(obj, "spec", "trainer", "env")
		for i, e := range env {
			variable, _ := e.(map[string]any)
			if envName, _, _ := unstructured.NestedString(variable, "name"); slices.Contains(torchRunReservedEnv, envName) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "env").Index(i), envName, "reserved for the trainer's torch plugin, which sets it"))
			}
		}
	}
	patches, _, _ := unstructured.NestedSlice(obj, "spec", "runtimePatches")
	for i, p := range patches {
		patch, _ := p.(map[string]any)
		manager, _, _ := unstructured.NestedString(patch, "manager")
		errs = append(errs, validation.IsDomainPrefixedPath(patchesPath.Index(i).Child("manager"), manager)...)
		jobs, _, _ := unstructured.NestedSlice(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")
		for j, rj := range jobs {
			job, _ := rj.(map[string]any)
			jobPath := patchesPath.Index(i).Child("trainingRuntimeSpec", "template", "spec", "replicatedJobs").Index(j)
			jobName, _, _ := unstructured.NestedString(job, "name")
			containers, exists := rt.containers[jobName]
			if known && !exists {
				errs = append(errs, field.Invalid(jobPath.Child("name"), jobName, fmt.Sprintf("runtime %s has no replicated job of this name", runtimeName)))
				continue
			}
			for _, list := range []string{"initContainers", "containers"} {
				patched, _, _ := unstructured.NestedSlice(job, "template", "spec", "template", "spec", list)
				for k, c := range patched {
					container, _ := c.(map[string]any)
					cPath := jobPath.Child("template", "spec", "template", "spec", list).Index(k)
					cname, _, _ := unstructured.NestedString(container, "name")
					if known && !slices.Contains(containers, cname) {
						errs = append(errs, field.Invalid(cPath.Child("name"), cname, fmt.Sprintf("runtime %s's job %s has no container of this name", runtimeName, jobName)))
					}
					if _, hasEnv := container["env"]; hasEnv && slices.Contains([]string{"node", "dataset-initializer", "model-initializer"}, cname) {
						errs = append(errs, field.Forbidden(cPath.Child("env"), "the node and initializer containers take env from spec.trainer and spec.initializer only"))
					}
				}
			}
		}
	}
	var findings Findings
	for _, e := range errs {
		findings = append(findings, Finding{Layer: LayerJobWebhook, Object: name, Message: e.Error()})
	}
	return findings
}
