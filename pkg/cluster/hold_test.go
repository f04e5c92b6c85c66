package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// patches are the merge patches sent, as resource name: patch.
func patches(dyn *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range dyn.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok {
			out = append(out, p.GetResource().Resource+" "+p.GetName()+": "+string(p.GetPatch()))
		}
	}
	return out
}

// withoutQueue is a job without Kueue's queue label: one Kueue does not
// manage.
func withoutQueue(job string) string {
	return strings.Replace(job, "labels: {kueue.x-k8s.io/queue-name: team-a}", "labels: {}", 1)
}

// Stop holds each kind by its own mechanism, status then says Suspended
// and what holds it, and resume undoes it.
func TestStopAndResume(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects []string
		ref     Ref
		stop    []string // the patches of stop
		stopped string   // what stop says
		status  string   // the status line of the stopped job
		resume  []string // the patches of resume
	}{{
		name:    "an AppWrapper: its Workload",
		objects: []string{appWrapper("{phase: Running}"), workloadOwnedBy("aw-uid", admittedWL)},
		ref:     Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"},
		stop: []string{`workloads appwrapper-demo-7d9f2: {"spec":{"active":false}}`,
			`appwrappers demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":"Workload appwrapper-demo-7d9f2 spec.active"}}}`},
		stopped: `stopped AppWrapper "demo" in namespace "ml" (Workload appwrapper-demo-7d9f2: spec.active is false now); Kueue evicts it: its pods go, its quota is freed, its objects stay; generator resume demo -n ml runs it again`,
		status:  "AppWrapper demo: Suspended: Deactivated: its Kueue Workload appwrapper-demo-7d9f2 is inactive (spec.active: false); generator resume demo -n ml queues it again",
		resume: []string{`workloads appwrapper-demo-7d9f2: {"spec":{"active":true}}`,
			`appwrappers demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":null}}}`},
	}, {
		name:    "a PyTorchJob Kueue manages: its Workload",
		objects: []string{pyTorchJob("{}"), workloadOwnedBy("ptj-uid", admittedWL)},
		ref:     Ref{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"},
		stop: []string{`workloads appwrapper-demo-7d9f2: {"spec":{"active":false}}`,
			`pytorchjobs demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":"Workload appwrapper-demo-7d9f2 spec.active"}}}`},
		stopped: `stopped PyTorchJob "demo" in namespace "ml" (Workload appwrapper-demo-7d9f2: spec.active is false now); Kueue evicts it: its pods go, its quota is freed, its objects stay; generator resume demo -n ml runs it again`,
		status:  "PyTorchJob demo: Suspended: Deactivated: its Kueue Workload appwrapper-demo-7d9f2 is inactive (spec.active: false); generator resume demo -n ml queues it again",
		resume: []string{`workloads appwrapper-demo-7d9f2: {"spec":{"active":true}}`,
			`pytorchjobs demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":null}}}`},
	}, {
		name:    "a PyTorchJob alone: its runPolicy",
		objects: []string{withoutQueue(pyTorchJob("{conditions: [{type: Running, status: 'True'}]}"))},
		ref:     Ref{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"},
		stop:    []string{`pytorchjobs demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":"spec.runPolicy.suspend"}},"spec":{"runPolicy":{"suspend":true}}}`},
		stopped: `stopped PyTorchJob "demo" in namespace "ml" (PyTorchJob demo: spec.runPolicy.suspend is true now); its pods go, its quota is freed, its objects stay; generator resume demo -n ml runs it again`,
		status:  "PyTorchJob demo: Suspended: spec.runPolicy.suspend is true; generator resume demo -n ml runs it again",
		resume:  []string{`pytorchjobs demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":null}},"spec":{"runPolicy":{"suspend":false}}}`},
	}, {
		name: "a JobSet with a queue that Kueue does not manage: its spec.suspend, marked",
		objects: []string{jobSet(false, jobSetResumed),
			pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, readyPod)},
		ref:     Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"},
		stop:    []string{`jobsets demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":"spec.suspend"}},"spec":{"suspend":true}}`},
		stopped: `stopped JobSet "demo" in namespace "ml" (JobSet demo: spec.suspend is true now); its pods go, its quota is freed, its objects stay; generator resume demo -n ml runs it again`,
		status:  "JobSet demo: Suspended: spec.suspend is true; generator resume demo -n ml runs it again",
		resume:  []string{`jobsets demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":null}},"spec":{"suspend":false}}`},
	}, {
		name:    "a TrainJob alone: its spec.suspend",
		objects: []string{withoutQueue(trainJob(false, "{}"))},
		ref:     Ref{Kind: "TrainJob", Namespace: "ml", Name: "demo"},
		stop:    []string{`trainjobs demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":"spec.suspend"}},"spec":{"suspend":true}}`},
		stopped: `stopped TrainJob "demo" in namespace "ml" (TrainJob demo: spec.suspend is true now); its pods go, its quota is freed, its objects stay; generator resume demo -n ml runs it again`,
		status:  "TrainJob demo: Suspended: spec.suspend is true; generator resume demo -n ml runs it again",
		resume:  []string{`trainjobs demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":null}},"spec":{"suspend":false}}`},
	}, {
		name:    "a PyTorchTrainingJob: paused",
		objects: []string{pyTorchTrainingJob + "\nstatus: {phase: Running}"},
		ref:     Ref{Kind: "PyTorchTrainingJob", Namespace: "ml", Name: "demo"},
		stop:    []string{`pytorchtrainingjobs demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":"spec.runMode.pause.enabled"}},"spec":{"runMode":{"pause":{"enabled":true}}}}`},
		stopped: `stopped PyTorchTrainingJob "demo" in namespace "ml" (PyTorchTrainingJob demo: spec.runMode.pause.enabled is true now); its pods go, its quota is freed, its objects stay; generator resume demo -n ml runs it again`,
		status:  "PyTorchTrainingJob demo: Suspended: spec.runMode.pause.enabled is true; generator resume demo -n ml runs it again",
		resume:  []string{`pytorchtrainingjobs demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":null}},"spec":{"runMode":{"pause":{"enabled":false}}}}`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := cluster(t, nil, tc.objects...)
			dyn := client.Dynamic.(*dynamicfake.FakeDynamicClient)
			ctx := context.Background()
			hold, err := client.Stop(ctx, tc.ref)
			require.NoError(t, err)
			require.Equal(t, tc.stopped, hold.String())
			require.Equal(t, tc.stop, patches(dyn))
			s, err := client.Status(ctx, tc.ref)
			require.NoError(t, err)
			require.Equal(t, Suspended, s.State)
			require.Equal(t, tc.status, s.Line())
			// Stopped already: nothing changes.
			again, err := client.Stop(ctx, tc.ref)
			require.NoError(t, err)
			require.False(t, again.Changed)
			require.Contains(t, again.String(), "is stopped already")
			require.Equal(t, tc.stop, patches(dyn), "the patches after a second stop")
			dyn.ClearActions()
			resumed, err := client.Resume(ctx, tc.ref)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(resumed.String(), "resumed "+tc.ref.String()), resumed.String())
			require.Equal(t, tc.resume, patches(dyn))
			s, err = client.Status(ctx, tc.ref)
			require.NoError(t, err)
			require.NotEqual(t, Suspended, s.State)
		})
	}
}

// A Workload held by someone else (kueuectl stop workload) leaves its job
// unmarked: stop marks it, as it says it is stopped already; resume takes
// the mark away with the hold.
func TestStopMarksAJobHeldAlready(t *testing.T) {
	inactive := strings.Replace(workloadOwnedBy("aw-uid", admittedWL), "spec: {queueName: team-a}", "spec: {queueName: team-a, active: false}", 1)
	require.Contains(t, inactive, "active: false")
	client := cluster(t, nil, appWrapper("{phase: Suspended}"), inactive)
	dyn := client.Dynamic.(*dynamicfake.FakeDynamicClient)
	ctx := context.Background()
	ref := Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}
	hold, err := client.Stop(ctx, ref)
	require.NoError(t, err)
	require.False(t, hold.Changed)
	require.Equal(t, []string{`appwrappers demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":"Workload appwrapper-demo-7d9f2 spec.active"}}}`}, patches(dyn))
	dyn.ClearActions()
	_, err = client.Resume(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{`workloads appwrapper-demo-7d9f2: {"spec":{"active":true}}`,
		`appwrappers demo: {"metadata":{"annotations":{"torchwrap.dev/stopped":null}}}`}, patches(dyn))
	obj, err := client.get(ctx, ref)
	require.NoError(t, err)
	require.NotContains(t, obj.GetAnnotations(), stoppedAnnotation)
}

func TestStopErrors(t *testing.T) {
	forbid := func(verb, resource string) func(*dynamicfake.FakeDynamicClient) {
		return func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor(verb, resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC"))
			})
		}
	}
	for _, tc := range []struct {
		name    string
		objects []string
		react   func(*dynamicfake.FakeDynamicClient)
		want    string
	}{{
		name:    "a job that has finished",
		objects: []string{appWrapper("{phase: Succeeded}")},
		want:    `the AppWrapper "demo" in namespace "ml" is Succeeded: there is nothing to stop; submit it again to run it again`,
	}, {
		name:    "you may not change the Workload",
		objects: []string{appWrapper("{phase: Running}"), workloadOwnedBy("aw-uid", admittedWL)},
		react:   forbid("patch", "workloads"),
		// MLBatch's team role: the job's own suspend field is no way
		// round, as Kueue sets it back at once (seen on Kueue v0.17.1).
		want: `your role does not let you stop a job Kueue manages: that takes patch on workloads.kueue.x-k8s.io in namespace ml (RBAC), as Kueue undoes a suspension of the job itself; ask an administrator for it (generator access --roles has it), or free its GPUs with generator delete demo -n ml, which deletes the job`,
	}, {
		name:    "you may not read Workloads",
		objects: []string{appWrapper("{phase: Running}")},
		react:   forbid("list", "workloads"),
		want:    `your role does not let you stop a job Kueue manages: that takes list and patch on workloads.kueue.x-k8s.io in namespace ml (RBAC), as Kueue undoes a suspension of the job itself; ask an administrator for it (generator access --roles has it), or free its GPUs with generator delete demo -n ml, which deletes the job`,
	}, {
		name:    "queued, without a Workload yet",
		objects: []string{appWrapper("{phase: Suspended}")},
		want:    `Kueue holds the AppWrapper "demo" in namespace "ml" in its queue and has made no Workload for it yet (its spec.suspend is true): there is nothing to stop yet; see it with generator status demo -n ml, and try again once Kueue has made its Workload`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := strings.Replace(tc.objects[0], "spec:\n  components:", "spec:\n  suspend: true\n  components:", 1)
			client := cluster(t, tc.react, append([]string{obj}, tc.objects[1:]...)...)
			_, err := client.Stop(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
			require.EqualError(t, err, tc.want)
		})
	}
}
