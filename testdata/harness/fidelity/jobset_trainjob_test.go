package fidelity_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/fidelity"
)

// object reads the one object of a manifest in testdata.
func object(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	objects := cases.Objects(t, data)
	require.Len(t, objects, 1)
	return objects[0]
}

// A hand-written AppWrapper(JobSet), bare JobSet and bare TrainJob, as the
// generator renders them, pass every layer, and so does the JobSet wrapped in
// the AppWrapper applied on its own.
func TestJobSetAndTrainJobAreAdmitted(t *testing.T) {
	c := newChecker(t)
	for _, file := range []string{"appwrapper-jobset.yaml", "jobset.yaml", "trainjob.yaml"} {
		t.Run(file, func(t *testing.T) {
			obj := object(t, file)
			require.Empty(t, c.CheckObject(obj))
			for _, job := range fidelity.Wrapped(obj) {
				require.Empty(t, c.CheckObject(job))
			}
		})
	}
}

// AppWrapper infers a JobSet's podSets itself: one for each replicated job,
// its replicas times its pods, which the checker holds to the job.
func TestJobSetPodSetsAreInferred(t *testing.T) {
	c := newChecker(t)
	aw := object(t, "appwrapper-jobset.yaml")
	replicatedJob(aw)["replicas"] = 2
	require.Empty(t, c.CheckObject(aw), "2 Jobs of 4 pods")
	comp := aw["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)
	comp["podSets"] = []any{map[string]any{"path": "template.spec.replicatedJobs[0].template.spec.template", "replicas": 4}}
	findings := c.CheckObject(aw)
	require.Equal(t, []string{fidelity.LayerPodSets}, findings.Layers(), findings.Error())
	require.Contains(t, findings.Error(), "replica count 4 differs from inferred count 8")
}

// AppWrapper cannot wrap a TrainJob, which embeds no pod template: the
// checker refuses one wrapped, whatever podSets it declares.
func TestWrappedTrainJobIsRefused(t *testing.T) {
	c := newChecker(t)
	for name, podSets := range map[string][]any{
		"no podSets": nil,
		"a podSet declared on a runtime patch": {map[string]any{
			"path":     "template.spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template",
			"replicas": 4,
		}},
	} {
		t.Run(name, func(t *testing.T) {
			aw := object(t, "appwrapper-jobset.yaml")
			comp := aw["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)
			comp["template"] = object(t, "trainjob.yaml")
			if podSets != nil {
				comp["podSets"] = podSets
			}
			findings := c.CheckObject(aw)
			require.Equal(t, []string{fidelity.LayerPodSets}, findings.Layers(), findings.Error())
			require.Contains(t, findings.Error(), "AppWrapper cannot wrap a TrainJob")
		})
	}
}

func replicatedJob(aw map[string]any) map[string]any {
	return fidelity.Wrapped(aw)[0]["spec"].(map[string]any)["replicatedJobs"].([]any)[0].(map[string]any)
}

func jobSetPodSpec(aw map[string]any) map[string]any {
	return replicatedJob(aw)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
}

// Each broken AppWrapper(JobSet) is caught, by the layers named.
func TestBrokenJobSetsAreCaught(t *testing.T) {
	c := newChecker(t)
	for name, tc := range map[string]struct {
		breakIt func(aw map[string]any)
		layers  []string
		message string
	}{
		"unknown PodSpec field": {
			breakIt: func(aw map[string]any) { jobSetPodSpec(aw)["hostname_typo"] = "x" },
			// AppWrapper's own podSet inference decodes PodSpecs strictly too.
			layers:  []string{fidelity.LayerCRD, fidelity.LayerPodSpec, fidelity.LayerPodSets},
			message: "hostname_typo",
		},
		"wrongly cased PodSpec field": {
			breakIt: func(aw map[string]any) { jobSetPodSpec(aw)["NodeSelector"] = map[string]any{"a": "b"} },
			layers:  []string{fidelity.LayerCRD, fidelity.LayerPodSpec, fidelity.LayerPodSets},
			message: "NodeSelector",
		},
		"unknown JobSet field": {
			breakIt: func(aw map[string]any) { fidelity.Wrapped(aw)[0]["spec"].(map[string]any)["replicatedJob"] = []any{} },
			layers:  []string{fidelity.LayerCRD},
			message: `unknown field "spec.replicatedJob"`,
		},
		"replicas that are not a number": {
			breakIt: func(aw map[string]any) { replicatedJob(aw)["replicas"] = "one" },
			layers:  []string{fidelity.LayerCRD, fidelity.LayerJobWebhook},
			message: "replicas",
		},
		"a subdomain that is not a DNS label": {
			breakIt: func(aw map[string]any) {
				fidelity.Wrapped(aw)[0]["spec"].(map[string]any)["network"].(map[string]any)["subdomain"] = "Train.Net"
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: "spec.network.subdomain",
		},
		"a name too long for its pods' names": {
			breakIt: func(aw map[string]any) {
				fidelity.Wrapped(aw)[0]["metadata"].(map[string]any)["name"] = "a-jobset-name-that-is-long-enough-to-break-the-pod-names"
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: "pod names generated for this JobSet will exceed 63 characters",
		},
		"dependsOn on the first replicated job": {
			breakIt: func(aw map[string]any) {
				replicatedJob(aw)["dependsOn"] = []any{map[string]any{"name": "node", "status": "Ready"}}
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: "DependsOn can't be set for the first ReplicatedJob",
		},
	} {
		t.Run(name, func(t *testing.T) {
			aw := object(t, "appwrapper-jobset.yaml")
			require.Empty(t, c.CheckObject(aw), "the unbroken manifest passes")
			tc.breakIt(aw)
			findings := c.CheckObject(aw)
			require.ElementsMatch(t, tc.layers, findings.Layers(), findings.Error())
			require.Contains(t, findings.Error(), tc.message)
		})
	}
}

func patchPodSpec(job map[string]any) map[string]any {
	patch := job["spec"].(map[string]any)["runtimePatches"].([]any)[0].(map[string]any)
	jobs := patch["trainingRuntimeSpec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["replicatedJobs"].([]any)
	return jobs[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
}

// Each broken TrainJob is caught, by the layers named: the CRD, and the
// PodSpec layer on the pod templates of its runtime patches.
func TestBrokenTrainJobsAreCaught(t *testing.T) {
	c := newChecker(t)
	for name, tc := range map[string]struct {
		breakIt func(job map[string]any)
		layers  []string
		message string
	}{
		"unknown PodSpec field in a runtime patch": {
			breakIt: func(job map[string]any) { patchPodSpec(job)["hostname_typo"] = "x" },
			layers:  []string{fidelity.LayerCRD, fidelity.LayerPodSpec},
			message: "hostname_typo",
		},
		"wrongly cased PodSpec field in a runtime patch": {
			breakIt: func(job map[string]any) { patchPodSpec(job)["nodeselector"] = map[string]any{"a": "b"} },
			layers:  []string{fidelity.LayerCRD, fidelity.LayerPodSpec},
			message: "nodeselector",
		},
		"a PodSpec field a runtime patch may not carry": {
			breakIt: func(job map[string]any) { patchPodSpec(job)["priorityClassName"] = "default-priority" },
			layers:  []string{fidelity.LayerCRD},
			message: "priorityClassName",
		},
		"a container field a runtime patch may not carry": {
			breakIt: func(job map[string]any) {
				patchPodSpec(job)["containers"].([]any)[0].(map[string]any)["image"] = "busybox"
			},
			layers:  []string{fidelity.LayerCRD},
			message: "image",
		},
		"no runtimeRef": {
			breakIt: func(job map[string]any) { delete(job["spec"].(map[string]any), "runtimeRef") },
			layers:  []string{fidelity.LayerCRD},
			message: "spec.runtimeRef",
		},
		"a name that is not a DNS-1035 label": {
			breakIt: func(job map[string]any) { job["metadata"].(map[string]any)["name"] = "1-train" },
			layers:  []string{fidelity.LayerCRD},
			message: "RFC 1035",
		},
		"a PET_ variable in the trainer's env": {
			breakIt: func(job map[string]any) {
				trainer := job["spec"].(map[string]any)["trainer"].(map[string]any)
				trainer["env"] = append(trainer["env"].([]any), map[string]any{"name": "PET_NODE_RANK", "value": "0"})
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: `spec.trainer.env[1]: Invalid value: "PET_NODE_RANK"`,
		},
		"env in the node container's patch": {
			breakIt: func(job map[string]any) {
				patchPodSpec(job)["containers"].([]any)[0].(map[string]any)["env"] = []any{map[string]any{"name": "A", "value": "b"}}
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env",
		},
		"a patch of a replicated job the runtime lacks": {
			breakIt: func(job map[string]any) {
				patch := job["spec"].(map[string]any)["runtimePatches"].([]any)[0].(map[string]any)
				patch["trainingRuntimeSpec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["replicatedJobs"].([]any)[0].(map[string]any)["name"] = "worker"
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: "runtime torch-distributed has no replicated job of this name",
		},
		"a patch of a container the runtime lacks": {
			breakIt: func(job map[string]any) {
				patchPodSpec(job)["containers"].([]any)[0].(map[string]any)["name"] = "pytorch"
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: "runtime torch-distributed's job node has no container of this name",
		},
		"a manager that is not a domain-prefixed path": {
			breakIt: func(job map[string]any) {
				job["spec"].(map[string]any)["runtimePatches"].([]any)[0].(map[string]any)["manager"] = "generator"
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: "spec.runtimePatches[0].manager",
		},
		"numNodes that is not a number": {
			breakIt: func(job map[string]any) {
				job["spec"].(map[string]any)["trainer"].(map[string]any)["numNodes"] = "four"
			},
			layers:  []string{fidelity.LayerCRD},
			message: "spec.trainer.numNodes",
		},
	} {
		t.Run(name, func(t *testing.T) {
			job := object(t, "trainjob.yaml")
			require.Empty(t, c.CheckObject(job), "the unbroken manifest passes")
			tc.breakIt(job)
			findings := c.CheckObject(job)
			require.ElementsMatch(t, tc.layers, findings.Layers(), findings.Error())
			require.Contains(t, findings.Error(), tc.message)
		})
	}
}
