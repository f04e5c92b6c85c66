package cli

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// How the commands that name a job take its name, and complete it: the
// questions to the cluster are tested in pkg/cluster, these tests check
// the command line's part.

// connectToFake puts a fake cluster in the place of the kubeconfig's, in
// namespace ml unless -n names another, for the rest of the test.
func connectToFake(t *testing.T, f clustertest.Fake) *dynamicfake.FakeDynamicClient {
	dyn, disc := f.Clients(t)
	connectTo = func(kube *cluster.Flags, _ string, _ io.Writer) (*cluster.Client, error) {
		return &cluster.Client{Dynamic: dyn, Watches: dyn, Discovery: disc, PodSource: clustertest.Pods{Dynamic: dyn}, ObjectSource: clustertest.Objects{Dynamic: dyn}, Namespace: cmp.Or(kube.Namespace(), "ml"), Server: "https://fake", Poll: time.Millisecond}, nil
	}
	t.Cleanup(func() { connectTo = (*cluster.Flags).Connect })
	return dyn
}

// generator runs the command line in-process.
func generator(args ...string) (out, errOut string, code int) {
	var o, e strings.Builder
	code = Run(args, Streams{In: strings.NewReader(""), Out: &o, Err: &e})
	return o.String(), e.String(), code
}

// marker marks a job as the generator's.
const marker = "annotations: {torchwrap.dev/generator-version: 0.1.0}"

// jobsThere are the jobs in namespace ml: the generator's AppWrapper llama
// (with the PyTorchJob it made of its name, and its three pods), its
// PyTorchJob and JobSet of one name, dup, and a JobSet someone else made;
// and one of the generator's in namespace other.
var jobsThere = strings.ReplaceAll(`
{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, metadata: {name: llama, namespace: ml, uid: a-uid, MARKER},
  spec: {components: [{template: {apiVersion: kubeflow.org/v1, kind: PyTorchJob, spec: {pytorchReplicaSpecs: {Master: {replicas: 1}, Worker: {replicas: 2}}}}}]}}
---
{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: llama, namespace: ml, uid: p-uid, MARKER,
  ownerReferences: [{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, name: llama, uid: a-uid, controller: true}]}}
---
{apiVersion: v1, kind: Pod, metadata: {name: llama-master-0, namespace: ml,
  labels: {workload.codeflare.dev/appwrapper: llama, training.kubeflow.org/replica-type: master, training.kubeflow.org/replica-index: '0'}}}
---
{apiVersion: v1, kind: Pod, metadata: {name: llama-worker-0, namespace: ml,
  labels: {workload.codeflare.dev/appwrapper: llama, training.kubeflow.org/replica-type: worker, training.kubeflow.org/replica-index: '0'}}}
---
{apiVersion: v1, kind: Pod, metadata: {name: llama-worker-1, namespace: ml,
  labels: {workload.codeflare.dev/appwrapper: llama, training.kubeflow.org/replica-type: worker, training.kubeflow.org/replica-index: '1'}}}
---
{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: dup, namespace: ml, uid: d1-uid, MARKER}}
---
{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: dup, namespace: ml, uid: d2-uid, MARKER}}
---
{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: theirs, namespace: ml, uid: t-uid}}
---
{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: far, namespace: other, uid: f-uid, MARKER}}`, "MARKER", marker)

// An empty NAME is no name, for every command that takes one; a KIND/NAME
// of no kind is a wrong command line too, before the cluster is asked.
func TestEmptyAndBadNames(t *testing.T) {
	for _, command := range []string{"status", "logs", "stop", "resume", "delete"} {
		out, errOut, code := generator(command, "")
		require.Equal(t, ExitUsage, code, command)
		require.Empty(t, out)
		_, noName, _ := generator(command)
		require.Equal(t, noName, errOut, command)
		require.Contains(t, errOut, "Error: name one job: generator "+command+" NAME [-n NAMESPACE]", command)
	}
	out, errOut, code := generator("delete", "pod/llama", "--kubeconfig", filepath.Join(t.TempDir(), "nowhere"))
	require.Equal(t, ExitUsage, code)
	require.Empty(t, out)
	require.Equal(t, "Error: pod/llama: pod is not a job kind (the kinds are AppWrapper, TrainJob, PyTorchJob, JobSet, PyTorchTrainingJob and DeepSpeedJob); name the job as NAME, or as KIND/NAME with one of them\n", errOut)
}

// A name that jobs of two kinds have is refused, and nothing is done, even
// with --ignore-not-found; KIND/NAME picks one.
func TestDeleteOneOfTwoJobsOfOneName(t *testing.T) {
	dyn := connectToFake(t, clustertest.Fake{Objects: jobsThere})
	out, errOut, code := generator("delete", "dup", "--ignore-not-found")
	require.Equal(t, ExitInvalid, code)
	require.Empty(t, out)
	require.Equal(t, `Error: 2 jobs in namespace "ml" are named "dup", PyTorchJob dup and JobSet dup; name one with its kind: pytorchjob/dup or jobset/dup`+"\n", errOut)
	out, errOut, code = generator("delete", "JobSets/dup", "--wait=false")
	require.Equal(t, ExitOK, code, errOut)
	require.True(t, strings.HasPrefix(out, `deleting JobSet "dup" in namespace "ml" (`), out)
	var deleted []string
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.GetResource().Resource+" "+a.(clienttesting.DeleteAction).GetName())
		}
	}
	require.Equal(t, []string{"jobsets dup"}, deleted)
}

// Submit says, at jobName, that a job of another kind has the name of the
// job it submits, and submits it all the same.
func TestSubmitBesideAJobOfItsName(t *testing.T) {
	var applied []string
	connectToFake(t, clustertest.Fake{
		Objects: `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: hello, namespace: ml, uid: p-uid}}`,
		React: func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
				patch := a.(clienttesting.PatchAction)
				if patch.GetPatchType() != types.ApplyPatchType {
					return false, nil, nil
				}
				applied = append(applied, a.GetResource().Resource+" "+patch.GetName())
				obj := &unstructured.Unstructured{}
				return true, obj, obj.UnmarshalJSON(patch.GetPatch())
			})
		},
	})
	t.Chdir(t.TempDir())
	require.NoError(t, os.WriteFile("settings.yaml", []byte("jobName: hello\ncontainerImage: busybox\nnumPods: 2\nmainProgram: train.py\n"), 0o600))
	out, errOut, code := generator("submit", "settings.yaml")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, `settings.yaml:1:10: warning: jobName: namespace "ml" has a PyTorchJob of that name too; status, logs, stop, resume and delete need the kind to tell them apart (appwrapper/hello or pytorchjob/hello), or choose another jobName`+"\n", errOut)
	require.Equal(t, `submitted AppWrapper "hello" in namespace "ml"; see how it does with: generator status hello -n ml`+"\n", out)
	require.Equal(t, []string{"appwrappers hello"}, applied)
}

// NAME completes with the jobs of the namespace (the generator's, else
// all), --role with the roles and members of the job's pods; cobra's
// __complete writes them, then the directive: no file names.
func TestCompleteNamesAndRoles(t *testing.T) {
	connectToFake(t, clustertest.Fake{Objects: jobsThere})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"delete", ""}, "dup\nllama\n"},
		{[]string{"status", "th"}, "theirs\n"},
		{[]string{"stop", "-n", "other", ""}, "far\n"},
		{[]string{"resume", "jobset/"}, "jobset/dup\n"},
		{[]string{"logs", "llama", "--role", ""}, "master\nmaster-0\nworker\nworker-0\nworker-1\n"},
		{[]string{"logs", "pytorchjob/dup", "--role", ""}, ""},
		// One name only; a name that two jobs have has no roles.
		{[]string{"delete", "llama", ""}, ""},
		{[]string{"logs", "dup", "--role", ""}, ""},
		{[]string{"logs", "--role", ""}, ""},
	} {
		out, errOut, code := generator(append([]string{"__complete"}, tc.args...)...)
		require.Equal(t, ExitOK, code, tc.args)
		require.Equal(t, tc.want+":4\n", out, tc.args)
		require.Equal(t, "Completion ended with directive: ShellCompDirectiveNoFileComp\n", errOut, tc.args)
	}
}

// A cluster that cannot be reached, or no kubeconfig, completes nothing,
// says nothing, and does not keep the shell waiting.
func TestCompleteWithoutACluster(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	dir := t.TempDir()
	kubeconfig := func(server string) string {
		path := filepath.Join(dir, strings.NewReplacer(":", "-", "/", "-").Replace(server))
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)), 0o600))
		return path
	}
	refused, nowhere := kubeconfig("https://127.0.0.1:1"), filepath.Join(dir, "nowhere")
	for _, args := range [][]string{
		{"delete", "--kubeconfig", refused, ""},
		{"logs", "llama", "--kubeconfig", refused, "--role", ""},
		{"delete", "--kubeconfig", nowhere, ""},
		{"logs", "llama", "--kubeconfig", nowhere, "--role", ""},
		// A cluster that takes the connection and never answers: the
		// completion's time is up.
		{"status", "--kubeconfig", kubeconfig("https://" + silent.Addr().String()), ""},
	} {
		start := time.Now()
		out, errOut, code := generator(append([]string{"__complete"}, args...)...)
		// Ended by the completion's own time (3 s), not by the client's
		// request timeout (30 s): a bound that tells the two apart with
		// room for a slow machine, not a measure of speed.
		require.Less(t, time.Since(start), 15*time.Second, args)
		require.Equal(t, ExitOK, code, args)
		require.Equal(t, ":4\n", out, args)
		require.Equal(t, "Completion ended with directive: ShellCompDirectiveNoFileComp\n", errOut, args)
	}
}
