package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/cluster/clustertest"
	"github.com/torchwrap/generator/pkg/failure"
)

// The questions of status, submit and follow to the cluster are tested in
// pkg/cluster; these tests check what the commands make of the answers.

// fakeCluster is a cluster of client-go's fake clients holding an
// AppWrapper demo of two pods in namespace ml, with the given status.
func fakeCluster(t *testing.T, status string) *cluster.Client {
	t.Helper()
	data, err := sigsyaml.YAMLToJSON([]byte(`
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: demo, namespace: ml, uid: aw-uid, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  components:
  - template:
      apiVersion: kubeflow.org/v1
      kind: PyTorchJob
      spec:
        pytorchReplicaSpecs:
          Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
          Worker: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
status: ` + status))
	require.NoError(t, err)
	aw := &unstructured.Unstructured{}
	require.NoError(t, aw.UnmarshalJSON(data))
	listKinds := map[schema.GroupVersionResource]string{
		{Group: "workload.codeflare.dev", Version: "v1beta2", Resource: "appwrappers"}:        "AppWrapperList",
		{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}:                  "WorkloadList",
		{Version: "v1", Resource: "pods"}:                                                     "PodList",
		{Version: "v1", Resource: "events"}:                                                   "EventList",
		{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}:                       "PyTorchJobList",
		{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}:                  "JobSetList",
		{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}:           "TrainJobList",
		{Group: "batch.tensorstack.dev", Version: "v1beta1", Resource: "pytorchtrainingjobs"}: "PyTorchTrainingJobList",
		{Group: "batch.tensorstack.dev", Version: "v1beta1", Resource: "deepspeedjobs"}:       "DeepSpeedJobList",
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, aw)
	// Discovery serves what the dynamic client holds.
	served := map[string]*metav1.APIResourceList{}
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	for gvr, list := range listKinds {
		gv := gvr.GroupVersion().String()
		if served[gv] == nil {
			served[gv] = &metav1.APIResourceList{GroupVersion: gv}
			disc.Resources = append(disc.Resources, served[gv])
		}
		served[gv].APIResources = append(served[gv].APIResources, metav1.APIResource{Name: gvr.Resource, Kind: strings.TrimSuffix(list, "List")})
	}
	return &cluster.Client{Dynamic: dyn, Watches: dyn, Discovery: disc, PodSource: clustertest.Pods{Dynamic: dyn}, ObjectSource: clustertest.Objects{Dynamic: dyn}, Namespace: "ml", Server: "https://fake", Poll: time.Millisecond}
}

var demo = cluster.Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}

func TestProgressOnALog(t *testing.T) {
	var out strings.Builder
	p := progress{w: &out}
	for _, s := range []cluster.Status{
		{Kind: "AppWrapper", Name: "demo", State: cluster.Queued, Queue: "team-a", Reason: "Pending", Message: "no quota"},
		{Kind: "AppWrapper", Name: "demo", State: cluster.Queued, Queue: "team-a", Reason: "Pending", Message: "no quota", Position: 1},
		{Kind: "AppWrapper", Name: "demo", State: cluster.Admitted, Pods: cluster.Pods{Expected: 2}},
		{Kind: "AppWrapper", Name: "demo", State: cluster.Admitted, Pods: cluster.Pods{Expected: 2, Running: 1, Ready: 1}},
		{Kind: "AppWrapper", Name: "demo", State: cluster.Running, Pods: cluster.Pods{Expected: 2, Running: 2, Ready: 2}},
		{Kind: "AppWrapper", Name: "demo", State: cluster.Succeeded},
	} {
		p.report(s)
	}
	p.end()
	require.Equal(t, `AppWrapper demo: Queued in LocalQueue team-a: Pending: no quota
AppWrapper demo: Admitted, pods ready 0/2
AppWrapper demo: Running, pods ready 2/2
AppWrapper demo: Succeeded
`, out.String())
}

func TestProgressOnATerminal(t *testing.T) {
	var out strings.Builder
	p := progress{w: &out, width: 44}
	for _, s := range []cluster.Status{
		{Kind: "AppWrapper", Name: "demo", State: cluster.Admitted, Pods: cluster.Pods{Expected: 2}},
		{Kind: "AppWrapper", Name: "demo", State: cluster.Admitted, Pods: cluster.Pods{Expected: 2, Running: 1, Ready: 1}},
		{Kind: "AppWrapper", Name: "demo", State: cluster.Failed, Reason: "FoundFailedPods"},
	} {
		p.report(s)
	}
	p.end()
	// The line is rewritten while the state stays, kept when it changes, and
	// cut to the width.
	require.Equal(t, "\r\x1b[KAppWrapper demo: Admitted, pods ready 0/2"+
		"\r\x1b[KAppWrapper demo: Admitted, pods ready 1/2\n"+
		"\r\x1b[KAppWrapper demo: Failed: FoundFailedPods\n", out.String())
	out.Reset()
	p = progress{w: &out, width: 30}
	p.report(cluster.Status{Kind: "AppWrapper", Name: "demo", State: cluster.Failed, Reason: "FoundFailedPods"})
	p.end()
	require.Equal(t, "\r\x1b[KAppWrapper demo: Failed: Fou…\n", out.String())
}

func TestFollowUntilItSucceeds(t *testing.T) {
	var out, errOut strings.Builder
	err := follow(context.Background(), Streams{Out: &out, Err: &errOut}, fakeCluster(t, "{phase: Succeeded}"), demo, 0)
	require.NoError(t, err)
	// Said once, on standard output.
	require.Equal(t, "AppWrapper demo: Succeeded\n", out.String())
	require.Empty(t, errOut.String())
}

// A failure noticed while the job is followed ends the live line, then
// says what failed and why, and whether it could not be kept.
func TestProgressNotices(t *testing.T) {
	var out strings.Builder
	p := progress{w: &out, width: 80}
	p.report(cluster.Status{Kind: "AppWrapper", Name: "demo", State: cluster.Running, Pods: cluster.Pods{Expected: 2, Running: 2, Ready: 2}})
	code := int32(1)
	f := failure.Failure{Key: "w", Pod: "demo-worker-0", Member: "worker-0", Container: "pytorch", Reason: "Error", ExitCode: &code}
	f.SetLines([]string{"Traceback (most recent call last):", `  File "train.py", line 3, in <module>`, "KeyError: 'labels'"})
	p.notice(cluster.Noticed{Attempt: 1, Of: 2, Failure: f, NotKept: errors.New("no space left on device")})
	require.Equal(t, "\r\x1b[KAppWrapper demo: Running, pods ready 2/2\n"+
		"attempt 1 of 2: worker-0 (container pytorch) exited 1: KeyError: 'labels'\n"+
		"  | Traceback (most recent call last):\n"+
		"  |   File \"train.py\", line 3, in <module>\n"+
		"  | KeyError: 'labels'\n"+
		"  (not kept on this machine: no space left on device)\n", out.String())
}

func TestFollowAJobThatFails(t *testing.T) {
	var out, errOut strings.Builder
	err := follow(context.Background(), Streams{Out: &out, Err: &errOut}, fakeCluster(t, "{phase: Failed, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}"), demo, 0)
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" failed; see it with generator status demo -n ml`)
	require.Empty(t, out.String())
	require.Equal(t, "AppWrapper demo: Failed: FoundFailedPods\n", errOut.String())
}

// A job whose pods (here, the job the AppWrapper wraps) the API server
// refuses every time ends the following with the refusal, left as it is,
// and how to delete it.
func TestFollowAJobThatIsRefused(t *testing.T) {
	var out, errOut strings.Builder
	err := follow(context.Background(), Streams{Out: &out, Err: &errOut}, fakeCluster(t, `{phase: Resetting, resettingCount: 1, conditions: [{type: Unhealthy, status: 'True', reason: CreateFailed,
  message: 'error creating components: admission webhook "vpytorchjob.kb.io" denied the request: spec: Forbidden'}]}`), demo, 0)
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" will not run: the API server refuses to create the job it wraps (admission webhook vpytorchjob.kb.io, as AppWrapper demo says): admission webhook "vpytorchjob.kb.io" denied the request: spec: Forbidden; change what it refuses, or ask its owner, an administrator; every retry will be refused the same way. It is left as it is; delete it with generator delete demo -n ml, and submit it again once the settings (or the namespace) allow its pods`)
	require.Empty(t, out.String())
}

func TestFollowUntilTheTimeout(t *testing.T) {
	var out, errOut strings.Builder
	err := follow(context.Background(), Streams{Out: &out, Err: &errOut}, fakeCluster(t, "{phase: Running}"), demo, 20*time.Millisecond)
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" has not finished after 20ms (last seen Admitted); it goes on: see how it does with generator status demo -n ml`)
	require.Empty(t, out.String())
}

// Ctrl-C (a canceled context) stops following, and the command says so,
// and that the job goes on.
func TestFollowStoppedByCtrlC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut strings.Builder
	err := follow(ctx, Streams{Out: &out, Err: &errOut}, fakeCluster(t, "{phase: Running}"), demo, time.Hour)
	require.ErrorAs(t, err, &stopped{})
	require.EqualError(t, err, `stopped following the AppWrapper "demo" in namespace "ml" (not read yet); the job goes on: see how it does with generator status demo -n ml`)
}

func TestStatusAsTextAndJSON(t *testing.T) {
	client := fakeCluster(t, "{phase: Running, conditions: [{type: PodsReady, status: 'False'}]}")
	var out strings.Builder
	require.NoError(t, showStatus(context.Background(), Streams{Out: &out}, client, demo, ""))
	require.Equal(t, `AppWrapper "demo" in namespace "ml": Admitted
  pods:      ready 0/2
  queue:     LocalQueue team-a
`, out.String())
	out.Reset()
	require.NoError(t, showStatus(context.Background(), Streams{Out: &out}, client, demo, "json"))
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.String()), &got))
	require.Equal(t, "Admitted", got["state"])
	require.Equal(t, "team-a", got["queue"])
}

func TestStatusAndSubmitUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "Error: name one job: generator status NAME [-n NAMESPACE], or give its settings: generator status -f settings.yaml\n"},
		{[]string{"status", "a", "b"}, "Error: name one job: generator status NAME [-n NAMESPACE], or give its settings: generator status -f settings.yaml\n"},
		{[]string{"status", "demo", "-f", "settings.yaml"}, "Error: name the job, or give its settings with -f, not both\n"},
		{[]string{"status", "demo", "-o", "yaml"}, "Error: -o json is the one output format; leave -o out for text\n"},
		{[]string{"submit", "settings.yaml", "--timeout", "5m"}, "Error: --timeout is how long --wait follows the job (0: as long as it takes); add --wait, or drop --timeout\n"},
	} {
		var out, errOut strings.Builder
		code := Run(tc.args, Streams{Out: &out, Err: &errOut})
		require.Equal(t, ExitUsage, code, tc.args)
		require.Empty(t, out.String())
		require.Equal(t, tc.want, errOut.String(), tc.args)
	}
}
