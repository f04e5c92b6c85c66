package gitops_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/cluster/clustertest"
	"github.com/torchwrap/generator/testdata/harness/gitops"
)

// want is what each tool must say of one recorded object.
type want struct {
	// argo is Argo CD's status; message what its message starts with, and
	// cause what else it must say (a failed job's cause).
	argo, message, cause string
	// flux is the status of the CEL of flux-kustomization.yaml.
	flux string
	// kstatus is what kstatus says of the object alone (upstream and Flux's
	// fork agree), which Flux reads without healthCheckExprs.
	kstatus string
	// cli is the state generator status reads from the object alone (no
	// Workload, no pods: a JobSet or TrainJob that runs is Admitted until
	// its pods are counted).
	cli cluster.State
}

// The expected health of every file of testdata/gitops/objects.
var table = map[string]want{
	"appwrapper-queued.yaml":    {argo: "Progressing", message: "Queued: ", flux: "InProgress", kstatus: "Current", cli: cluster.Queued},
	"appwrapper-running.yaml":   {argo: "Progressing", message: "Running", flux: "InProgress", kstatus: "Current", cli: cluster.Running},
	"appwrapper-stopped.yaml":   {argo: "Suspended", message: "Suspended: held by Workload ", flux: "Current", kstatus: "Current", cli: cluster.Suspended},
	"appwrapper-succeeded.yaml": {argo: "Healthy", message: "Succeeded", flux: "Current", kstatus: "Current", cli: cluster.Succeeded},
	"appwrapper-failed.yaml":    {argo: "Degraded", message: "Failed: FailedComponent: Found 1 failed components", cause: "", flux: "Failed", kstatus: "Current", cli: cluster.Failed},

	"pytorchjob-queued.yaml":    {argo: "Progressing", message: "Queued: ", flux: "InProgress", kstatus: "Current", cli: cluster.Queued},
	"pytorchjob-running.yaml":   {argo: "Progressing", message: "Running", flux: "InProgress", kstatus: "Current", cli: cluster.Running},
	"pytorchjob-stopped.yaml":   {argo: "Suspended", message: "Suspended: held by Workload ", flux: "Current", kstatus: "Current", cli: cluster.Suspended},
	"pytorchjob-succeeded.yaml": {argo: "Healthy", message: "Succeeded", flux: "Current", kstatus: "Current", cli: cluster.Succeeded},
	"pytorchjob-failed.yaml":    {argo: "Degraded", message: "Failed: PyTorchJobFailed: ", cause: " replica(s) failed", flux: "Failed", kstatus: "Current", cli: cluster.Failed},

	"jobset-queued.yaml":    {argo: "Progressing", message: "Queued: ", flux: "InProgress", kstatus: "Current", cli: cluster.Queued},
	"jobset-running.yaml":   {argo: "Progressing", message: "Admitted: ", flux: "InProgress", kstatus: "Current", cli: cluster.Admitted},
	"jobset-stopped.yaml":   {argo: "Suspended", message: "Suspended: held by Workload ", flux: "Current", kstatus: "Current", cli: cluster.Suspended},
	"jobset-succeeded.yaml": {argo: "Healthy", message: "Succeeded", flux: "Current", kstatus: "Current", cli: cluster.Succeeded},
	"jobset-failed.yaml":    {argo: "Degraded", message: "Failed: FailedJobs: ", cause: "first failed job: jobset-failed-node-0", flux: "Failed", kstatus: "Current", cli: cluster.Failed},

	"trainjob-queued.yaml":    {argo: "Progressing", message: "Queued: ", flux: "InProgress", kstatus: "Current", cli: cluster.Queued},
	"trainjob-running.yaml":   {argo: "Progressing", message: "Admitted: ", flux: "InProgress", kstatus: "Current", cli: cluster.Admitted},
	"trainjob-stopped.yaml":   {argo: "Suspended", message: "Suspended: held by Workload ", flux: "Current", kstatus: "Current", cli: cluster.Suspended},
	"trainjob-succeeded.yaml": {argo: "Healthy", message: "Succeeded", flux: "Current", kstatus: "Current", cli: cluster.Succeeded},
	"trainjob-failed.yaml":    {argo: "Degraded", message: "Failed: FailedJobs: ", cause: "first failed job: trainjob-failed-node-0", flux: "Failed", kstatus: "Current", cli: cluster.Failed},

	// Written by hand: T9k's jobs, which Kueue does not manage.
	"pytorchtrainingjob-queued.yaml":    {argo: "Progressing", message: "Queued in T9k queue research", flux: "InProgress", kstatus: "Current", cli: cluster.Queued},
	"pytorchtrainingjob-running.yaml":   {argo: "Progressing", message: "Running", flux: "InProgress", kstatus: "Current", cli: cluster.Running},
	"pytorchtrainingjob-stopped.yaml":   {argo: "Suspended", message: "Suspended: held by spec.runMode.pause.enabled", flux: "Current", kstatus: "Current", cli: cluster.Suspended},
	"pytorchtrainingjob-succeeded.yaml": {argo: "Healthy", message: "Succeeded", flux: "Current", kstatus: "Current", cli: cluster.Succeeded},
	"pytorchtrainingjob-failed.yaml":    {argo: "Degraded", message: "Failed: ReplicaFailed: worker 1 failed", flux: "Failed", kstatus: "Current", cli: cluster.Failed},
	"deepspeedjob-queued.yaml":          {argo: "Progressing", message: "Queued in T9k queue research", flux: "InProgress", kstatus: "Current", cli: cluster.Queued},
	"deepspeedjob-running.yaml":         {argo: "Progressing", message: "Running", flux: "InProgress", kstatus: "Current", cli: cluster.Running},
	"deepspeedjob-stopped.yaml":         {argo: "Suspended", message: "Suspended: held by spec.runMode.pause.enabled", flux: "Current", kstatus: "Current", cli: cluster.Suspended},
	"deepspeedjob-succeeded.yaml":       {argo: "Healthy", message: "Succeeded", flux: "Current", kstatus: "Current", cli: cluster.Succeeded},
	"deepspeedjob-failed.yaml":          {argo: "Degraded", message: "Failed: ReplicaFailed: worker 1 failed", flux: "Failed", kstatus: "Current", cli: cluster.Failed},
}

// Every recorded object, in every tool: the health checks of docs/gitops
// give the health of the table, and generator status the same state.
func TestRecordedObjects(t *testing.T) {
	checks := gitops.Load(t)
	entries, err := os.ReadDir(gitops.ObjectsDir(t))
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			files = append(files, e.Name())
		}
	}
	var listed []string
	for file := range table {
		listed = append(listed, file)
	}
	slices.Sort(listed)
	require.Equal(t, listed, files, "the table lists every recorded object")

	for _, file := range files {
		t.Run(strings.TrimSuffix(file, ".yaml"), func(t *testing.T) {
			w := table[file]
			obj := gitops.Object(t, filepath.Join(gitops.ObjectsDir(t), file))
			require.Empty(t, obj.GetManagedFields(), "managedFields are stripped")
			h, err := checks.Evaluate(obj)
			require.NoError(t, err)
			t.Log(h)
			require.Equal(t, w.argo, h.Argo, "Argo CD")
			require.True(t, strings.HasPrefix(h.ArgoMessage, w.message), "Argo CD's message %q starts with %q", h.ArgoMessage, w.message)
			require.Contains(t, h.ArgoMessage, w.cause, "Argo CD's message")
			require.Equal(t, w.flux, h.Flux, "Flux's CEL")
			require.Equal(t, w.kstatus, h.KStatus, "kstatus")
			require.Equal(t, w.kstatus, h.FluxKStatus, "Flux's kstatus")

			// generator status of the object alone says the same.
			dyn, disc := clustertest.Fake{Objects: string(must(os.ReadFile(filepath.Join(gitops.ObjectsDir(t), file))))}.Clients(t)
			client := &cluster.Client{Dynamic: dyn, Discovery: disc, PodSource: clustertest.Pods{Dynamic: dyn}, ObjectSource: clustertest.Objects{Dynamic: dyn}, Namespace: obj.GetNamespace(), Server: "https://fake"}
			st, err := client.Status(context.Background(), cluster.Ref{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()})
			require.NoError(t, err)
			require.Equal(t, w.cli, st.State, "generator status: %s", st.Line())
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
