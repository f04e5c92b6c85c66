package importer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/importer"
	"github.com/torchwrap/generator/testdata/cases"
)

// importOne reads a manifest of one job, after any ConfigMap (helmHook's),
// and imports it.
func importOne(t *testing.T, name string, manifest []byte) *importer.Result {
	t.Helper()
	objects, err := importer.Read(name, manifest)
	require.NoError(t, err)
	var jobs []*importer.Result
	for _, obj := range objects {
		res, err := importer.Import(obj)
		require.NoError(t, err)
		if res != nil {
			jobs = append(jobs, res)
		}
	}
	require.Len(t, jobs, 1)
	return jobs[0]
}

// Every settings file we own, rendered, imports into settings that render
// the same objects: nothing lost, nothing added, no setting refused.
func TestRoundTripOfEverythingWeOwn(t *testing.T) {
	for _, file := range cases.ValidSettings(t) {
		name, _ := filepath.Rel(cases.Path(t), file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			manifest := cases.Render(t, file)
			res := importOne(t, name, manifest)
			assert.Empty(t, res.Lost, "lost")
			assert.Empty(t, res.Added, "added")
			assert.Empty(t, res.Refused, "refused")
			// The job is the last document.
			docs := strings.Split(string(manifest), "\n---\n")
			var want map[string]any
			require.NoError(t, sigsyaml.Unmarshal([]byte(docs[len(docs)-1]), &want))
			assert.Equal(t, want, res.Rendered, "the imported settings render another job:\n%s", res.Settings)
		})
	}
}

// A job as a cluster gives it back (kubectl get -o yaml) imports with nothing
// lost: what the API server writes is ignored, and what the controllers and
// Kueue set in every job of the kind is left to them, and listed as such.
func TestJobReadFromACluster(t *testing.T) {
	manifest := cases.Render(t, cases.Path(t, "testdata", "golden", "bare-pytorchjob", "settings.yaml"))
	var job map[string]any
	require.NoError(t, sigsyaml.Unmarshal(manifest, &job))
	metadata := job["metadata"].(map[string]any)
	metadata["uid"] = "6a1f3c52-4a0e-4c1b-9d51-2f6f1e0c9a77"
	metadata["resourceVersion"] = "48213"
	metadata["generation"] = 2.0
	metadata["creationTimestamp"] = "2026-11-26T10:00:00Z"
	metadata["finalizers"] = []any{"kueue.x-k8s.io/resource-in-use"}
	metadata["managedFields"] = []any{map[string]any{"manager": "kubectl", "operation": "Update"}}
	spec := job["spec"].(map[string]any)
	spec["runPolicy"] = map[string]any{"cleanPodPolicy": "None", "suspend": false}
	for _, replica := range spec["pytorchReplicaSpecs"].(map[string]any) {
		container := dig(replica, "template", "spec", "containers").([]any)[0].(map[string]any)
		container["ports"] = []any{map[string]any{"containerPort": 23456.0, "name": "pytorchjob-port", "protocol": "TCP"}}
	}
	job["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Running", "status": "True"}}}
	fromCluster, err := sigsyaml.Marshal(job)
	require.NoError(t, err)

	res := importOne(t, "job.yaml", fromCluster)
	assert.Empty(t, res.Lost)
	assert.Equal(t, []string{
		"spec.pytorchReplicaSpecs.Master.template.spec.containers[0].ports",
		"spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].ports",
		"spec.runPolicy.cleanPodPolicy",
		"spec.runPolicy.suspend",
	}, paths(res.Defaulted))
	assert.Contains(t, string(res.Settings), "# Left to the cluster, which sets them in every job of the kind:")
}
