//go:build e2e && linux

package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/e2e"
	"github.com/torchwrap/generator/testdata/harness/fidelity"
)

// TestExamplesOnARealAPIServer renders every example with the generator
// binary and hands it to a real kube-apiserver with the AppWrapper,
// PyTorchJob, JobSet and TrainJob CRDs, and the CRDs built from our T9k
// schema, installed: strict server-side dry-run, a real create, a get that
// returns what was sent (with the CRD's defaults), and a delete; the wrapped
// job of an AppWrapper is also applied on its own, since the AppWrapper CRD
// does not look inside its template. An example with wrapper: none renders
// the job alone, which goes through the same steps.
func TestExamplesOnARealAPIServer(t *testing.T) {
	cluster := startCluster(t)
	generator := cases.BuildGenerator(t)

	// create, not apply: the PyTorchJob CRD is too large for the
	// last-applied-configuration annotation of a client-side apply.
	crds := jobCRDs(t, fidelity.AppWrapperCRD, fidelity.PyTorchJobCRD, fidelity.JobSetCRD, fidelity.TrainJobCRD)
	require.NoError(t, cluster.CreateAll(crds))
	// What the API server keeps is what was sent, with the CRD's defaults
	// (a TrainJob's managedBy and suspend).
	byKind := map[string]*fidelity.CRD{}
	for _, data := range crds {
		crd, err := fidelity.ParseCRD(data)
		require.NoError(t, err)
		byKind[crd.GVK.Kind] = crd
	}

	for _, example := range append(cases.Examples(t), cases.Starters(t)...) {
		t.Run(filepath.Base(example), func(t *testing.T) {
			manifest := cases.Run(t, nil, generator, "render", "-f", example)
			objects := cases.Objects(t, manifest)
			require.Len(t, objects, 1)
			sent := jsonObject(t, objects[0])
			namespace := namespaceOf(sent)
			ensureNamespace(t, cluster, namespace)

			kubectl(t, cluster, manifest, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			kubectl(t, cluster, manifest, "create", "--validate=strict", "-f", "-")
			// get -f: the object the manifest names, an AppWrapper or a bare job,
			// in a List of one.
			list := jsonObject(t, []byte(kubectl(t, cluster, manifest, "get", "-f", "-", "-o", "json")))
			require.Len(t, list["items"], 1)
			got := list["items"].([]any)[0].(map[string]any)
			admitted, problems := byKind[sent["kind"].(string)].Admit(sent)
			require.Empty(t, problems)
			require.Equal(t, jsonObject(t, admitted)["spec"], got["spec"], "the API server keeps the spec as sent, with the CRD's defaults")
			for _, field := range []string{"labels", "annotations"} {
				sentMeta, gotMeta := sent["metadata"].(map[string]any), got["metadata"].(map[string]any)
				if want, ok := sentMeta[field].(map[string]any); ok {
					require.Subset(t, gotMeta[field], want)
				}
			}

			for _, job := range fidelity.Wrapped(objects[0]) {
				job["metadata"].(map[string]any)["namespace"] = namespace
				kubectl(t, cluster, mustJSON(t, job), "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			}

			kubectl(t, cluster, manifest, "delete", "--wait=true", "-f", "-")
			_, err := cluster.Kubectl(manifest, "get", "-f", "-")
			require.ErrorContains(t, err, "NotFound")
		})
	}

	// Every golden output, and the job it wraps, passes a strict server-side
	// dry-run too.
	for _, g := range cases.Golden(t) {
		t.Run("golden/"+g.Name, func(t *testing.T) {
			manifest, err := os.ReadFile(filepath.Join(g.Dir, "expected.yaml"))
			require.NoError(t, err)
			// The job comes last, after any ConfigMap (helmHook's).
			objects := cases.Objects(t, manifest)
			aw := objects[len(objects)-1]
			namespace := namespaceOf(aw)
			ensureNamespace(t, cluster, namespace)
			kubectl(t, cluster, manifest, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			for _, job := range fidelity.Wrapped(aw) {
				job["metadata"].(map[string]any)["namespace"] = namespace
				kubectl(t, cluster, mustJSON(t, job), "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			}
		})
	}

	// Broken on purpose: strict validation on the server refuses unknown
	// fields, in the AppWrapper and in the wrapped job applied on its own.
	// Inside the AppWrapper's template the server does not look: that is why
	// the wrapped job is checked on its own above.
	manifest := cases.Run(t, nil, generator, "render", "-f", cases.Example(t, "helloworld"))
	aw := cases.Objects(t, manifest)[0]
	aw["spec"].(map[string]any)["suspended"] = false
	_, err := cluster.Kubectl(mustJSON(t, aw), "apply", "--dry-run=server", "--validate=strict", "-f", "-")
	require.ErrorContains(t, err, `unknown field "spec.suspended"`)

	aw = cases.Objects(t, manifest)[0]
	job := fidelity.Wrapped(aw)[0]
	master := job["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)["Master"].(map[string]any)
	master["template"].(map[string]any)["spec"].(map[string]any)["hostname_typo"] = "x"
	kubectl(t, cluster, mustJSON(t, aw), "apply", "--dry-run=server", "--validate=strict", "-f", "-")
	_, err = cluster.Kubectl(mustJSON(t, job), "apply", "--dry-run=server", "--validate=strict", "-f", "-")
	require.ErrorContains(t, err, `unknown field "spec.pytorchReplicaSpecs.Master.template.spec.hostname_typo"`)
}

// startCluster builds (or reuses) the binaries and starts a cluster that is
// stopped when the test ends, pass or fail; nothing is left running.
func startCluster(t *testing.T) *e2e.Cluster {
	t.Helper()
	bins, err := e2e.Build(cases.Path(t, "testdata"), t.Logf)
	require.NoError(t, err)
	cluster, err := e2e.Start(bins, t.TempDir())
	require.NoError(t, err)
	stopAtCleanup(t, cluster)
	return cluster
}

// stopAtCleanup stops the cluster when the test ends, pass or fail, and
// checks that nothing it started is left running.
func stopAtCleanup(t *testing.T, cluster *e2e.Cluster) {
	t.Cleanup(func() {
		pids := cluster.Stop()
		t.Logf("stopped processes %v", pids)
		for _, pid := range pids {
			require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "process %d is still running", pid)
		}
	})
}

func kubectl(t *testing.T, c *e2e.Cluster, stdin []byte, args ...string) string {
	t.Helper()
	out, err := c.Kubectl(stdin, args...)
	require.NoError(t, err)
	return out
}

// jobCRDs are the CRDs of the objects the generator renders: the T9k kinds
// from our schema, and the upstream ones given, from their modules.
func jobCRDs(t *testing.T, upstream ...fidelity.UpstreamCRD) [][]byte {
	t.Helper()
	crds, err := fidelity.JobCRDs(upstream...)
	require.NoError(t, err)
	return crds
}

func ensureNamespace(t *testing.T, c *e2e.Cluster, namespace string) {
	t.Helper()
	if _, err := c.Kubectl(nil, "get", "namespace", namespace); err != nil {
		kubectl(t, c, nil, "create", "namespace", namespace)
	}
}

// namespaceOf is the namespace an object goes to: its own, or default.
func namespaceOf(obj map[string]any) string {
	meta := obj["metadata"].(map[string]any)
	if namespace, _ := meta["namespace"].(string); namespace != "" {
		return namespace
	}
	return "default"
}

// jsonObject reads an object (YAML or JSON text, or a decoded object) into
// the types encoding/json gives, so that objects from both sides compare.
func jsonObject(t *testing.T, v any) map[string]any {
	t.Helper()
	data, ok := v.([]byte)
	if !ok {
		data = mustJSON(t, v)
	}
	data, err := sigsyaml.YAMLToJSON(data)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(data, &obj))
	return obj
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}
