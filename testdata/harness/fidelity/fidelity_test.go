package fidelity_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/fidelity"
)

var checker = sync.OnceValues(fidelity.NewChecker)

func newChecker(t *testing.T) *fidelity.Checker {
	t.Helper()
	c, err := checker()
	require.NoError(t, err)
	return c
}

// Every golden output passes every layer.
func TestGoldenOutputsAreAdmitted(t *testing.T) {
	c := newChecker(t)
	for _, g := range cases.Golden(t) {
		t.Run(g.Name, func(t *testing.T) {
			manifest, err := os.ReadFile(filepath.Join(g.Dir, "expected.yaml"))
			require.NoError(t, err)
			require.Empty(t, c.CheckManifest(manifest))
		})
	}
}

// Every example, and every starter of generator init, passes every layer,
// and so does the job it wraps applied on its own (kubectl apply of the job
// without the AppWrapper).
func TestExamplesAreAdmitted(t *testing.T) {
	c := newChecker(t)
	for _, file := range append(cases.Examples(t), cases.Starters(t)...) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			manifest := cases.Render(t, file)
			require.Empty(t, c.CheckManifest(manifest))
			for _, aw := range cases.Objects(t, manifest) {
				for _, job := range fidelity.Wrapped(aw) {
					require.Empty(t, c.CheckObject(job))
				}
			}
		})
	}
}

// helloworld returns the helloworld example's AppWrapper, to break on purpose.
func helloworld(t *testing.T) map[string]any {
	t.Helper()
	objects := cases.Objects(t, cases.Render(t, cases.Example(t, "helloworld")))
	require.Len(t, objects, 1)
	return objects[0]
}

func master(aw map[string]any) map[string]any {
	return fidelity.Wrapped(aw)[0]["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)["Master"].(map[string]any)
}

func container(aw map[string]any) map[string]any {
	spec := master(aw)["template"].(map[string]any)["spec"].(map[string]any)
	return spec["containers"].([]any)[0].(map[string]any)
}

// Each broken manifest is caught, by the layers named.
func TestBrokenManifestsAreCaught(t *testing.T) {
	c := newChecker(t)
	for name, tc := range map[string]struct {
		breakIt func(aw map[string]any)
		layers  []string
		message string
	}{
		"unknown PodSpec field": {
			breakIt: func(aw map[string]any) {
				master(aw)["template"].(map[string]any)["spec"].(map[string]any)["hostname_typo"] = "x"
			},
			// AppWrapper's own podSet inference decodes PodSpecs strictly too.
			layers:  []string{fidelity.LayerCRD, fidelity.LayerPodSpec, fidelity.LayerPodSets},
			message: "hostname_typo",
		},
		"podSet count that disagrees with the job": {
			breakIt: func(aw map[string]any) {
				comp := aw["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)
				comp["podSets"] = []any{
					map[string]any{"path": "template.spec.pytorchReplicaSpecs.Master.template", "replicas": 1},
					map[string]any{"path": "template.spec.pytorchReplicaSpecs.Worker.template", "replicas": 5},
				}
			},
			layers:  []string{fidelity.LayerPodSets},
			message: "replica count 5 differs from inferred count 3",
		},
		"Master replicas 2": {
			breakIt: func(aw map[string]any) { master(aw)["replicas"] = 2 },
			layers:  []string{fidelity.LayerJobWebhook},
			message: "Master",
		},
		"a container not named pytorch": {
			breakIt: func(aw map[string]any) { container(aw)["name"] = "trainer" },
			layers:  []string{fidelity.LayerJobWebhook},
			message: "pytorch",
		},
		"a job name that is not a DNS-1035 label": {
			breakIt: func(aw map[string]any) {
				fidelity.Wrapped(aw)[0]["metadata"].(map[string]any)["name"] = "1-job"
			},
			layers:  []string{fidelity.LayerJobWebhook},
			message: "metadata.name",
		},
		"an unknown AppWrapper field": {
			breakIt: func(aw map[string]any) { aw["spec"].(map[string]any)["suspended"] = true },
			layers:  []string{fidelity.LayerCRD},
			message: `unknown field "spec.suspended"`,
		},
		"a wrong type in the wrapped job": {
			breakIt: func(aw map[string]any) { master(aw)["replicas"] = "one" },
			layers:  []string{fidelity.LayerCRD, fidelity.LayerJobWebhook, fidelity.LayerPodSets},
			message: "replicas",
		},
		"a wrapped object in another namespace": {
			breakIt: func(aw map[string]any) {
				fidelity.Wrapped(aw)[0]["metadata"].(map[string]any)["namespace"] = "elsewhere"
			},
			layers:  []string{fidelity.LayerAppWrapperWebhook},
			message: `namespace "elsewhere"`,
		},
		"a component without pods": {
			breakIt: func(aw map[string]any) {
				comp := aw["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)
				comp["template"] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}}
			},
			layers:  []string{fidelity.LayerPodSets, fidelity.LayerManifest},
			message: "no podSets",
		},
		"an invalid label value": {
			breakIt: func(aw map[string]any) {
				aw["metadata"].(map[string]any)["labels"].(map[string]any)["kueue.x-k8s.io/queue-name"] = "not a label value"
			},
			layers:  []string{fidelity.LayerCRD},
			message: "metadata.labels",
		},
	} {
		t.Run(name, func(t *testing.T) {
			aw := helloworld(t)
			require.Empty(t, c.CheckObject(aw), "the unbroken manifest passes")
			tc.breakIt(aw)
			findings := c.CheckObject(aw)
			require.ElementsMatch(t, tc.layers, findings.Layers(), findings.Error())
			require.Contains(t, findings.Error(), tc.message)
		})
	}
}

// Every real T9k job file passes our T9k schema (with unknown fields refused)
// and has pod templates that decode strictly: the schema describes what T9k
// users really write.
func TestRealT9kJobsPassOurSchema(t *testing.T) {
	c := newChecker(t)
	files, err := filepath.Glob(cases.Path(t, "testdata", "t9k-examples", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			objects := cases.Objects(t, data)
			require.Len(t, objects, 1)
			require.Empty(t, c.CheckObject(objects[0]))
		})
	}
}

// Our T9k schema catches what it must: unknown fields, the old spellings,
// wrong types and values.
func TestT9kSchemaRefusesMistakes(t *testing.T) {
	c := newChecker(t)
	job := func() map[string]any {
		return map[string]any{
			"apiVersion": fidelity.T9kGroupVersion, "kind": "PyTorchTrainingJob",
			"metadata": map[string]any{"name": "job"},
			"spec": map[string]any{
				"torchrunConfig": map[string]any{"enabled": true, "procPerNode": "8"},
				"replicaSpecs": []any{map[string]any{"type": "master", "replicas": 1, "template": map[string]any{
					"spec": map[string]any{"containers": []any{map[string]any{"name": "pytorch", "image": "busybox"}}},
				}}},
			},
		}
	}
	require.Empty(t, c.CheckObject(job()))
	for name, tc := range map[string]struct {
		breakIt func(spec map[string]any)
		message string
	}{
		"old spelling enable": {
			breakIt: func(spec map[string]any) { spec["torchrunConfig"].(map[string]any)["enable"] = true },
			message: `unknown field "spec.torchrunConfig.enable"`,
		},
		"procPerNode as a number": {
			breakIt: func(spec map[string]any) { spec["torchrunConfig"].(map[string]any)["procPerNode"] = 8 },
			message: "spec.torchrunConfig.procPerNode",
		},
		"Queue in capitals": {
			breakIt: func(spec map[string]any) {
				spec["scheduler"] = map[string]any{"t9kScheduler": map[string]any{"Queue": "q"}}
			},
			message: `unknown field "spec.scheduler.t9kScheduler.Queue"`,
		},
		"priority above 100": {
			breakIt: func(spec map[string]any) {
				spec["scheduler"] = map[string]any{"t9kScheduler": map[string]any{"queue": "q", "priority": 101}}
			},
			message: "spec.scheduler.t9kScheduler.priority",
		},
		"unknown cleanUpPolicy": {
			breakIt: func(spec map[string]any) { spec["runPolicy"] = map[string]any{"cleanUpPolicy": "Always"} },
			message: "spec.runPolicy.cleanUpPolicy",
		},
	} {
		t.Run(name, func(t *testing.T) {
			obj := job()
			tc.breakIt(obj["spec"].(map[string]any))
			findings := c.CheckObject(obj)
			require.Equal(t, []string{fidelity.LayerCRD}, findings.Layers(), findings.Error())
			require.Contains(t, findings.Error(), tc.message)
		})
	}
}

func TestUpstreamCRDsAreThePinnedOnes(t *testing.T) {
	for _, crd := range fidelity.UpstreamCRDs {
		data, err := crd.Read() // checks the sha256
		require.NoError(t, err)
		parsed, err := fidelity.ParseCRD(data)
		require.NoError(t, err)
		require.NotEmpty(t, parsed.GVK.Kind)
	}
}

// AppWrapper cannot infer the pods of T9k jobs, so it trusts the declared
// podSets: the checker holds them to the job's own pod templates and counts.
func TestT9kPodSetsMustMatchTheJob(t *testing.T) {
	c := newChecker(t)
	for name, breakIt := range map[string]func(comp map[string]any){
		"a replica count that differs": func(comp map[string]any) {
			comp["podSets"].([]any)[1].(map[string]any)["replicas"] = 5
		},
		"a missing podSet": func(comp map[string]any) {
			comp["podSets"] = comp["podSets"].([]any)[:1]
		},
		"no podSets at all": func(comp map[string]any) { delete(comp, "podSets") },
	} {
		t.Run(name, func(t *testing.T) {
			objects := cases.Objects(t, cases.Render(t, cases.Example(t, "pytorchtrainingjob-torchrun")))
			aw := objects[0]
			require.Empty(t, c.CheckObject(aw), "the unbroken manifest passes")
			breakIt(aw["spec"].(map[string]any)["components"].([]any)[0].(map[string]any))
			findings := c.CheckObject(aw)
			require.Equal(t, []string{fidelity.LayerPodSets}, findings.Layers(), findings.Error())
		})
	}
}
