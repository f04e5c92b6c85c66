package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// submitted is the job Submit is given: the AppWrapper demo, as rendered.
func submitted(t *testing.T) *Job {
	return rendered(t, appWrapper("{}"))
}

// rendered is a job as Submit is given it: without what the cluster adds.
func rendered(t *testing.T, manifest string) *Job {
	obj := object(t, manifest)
	obj.SetUID("")
	obj.SetFinalizers(nil)
	unstructured.RemoveNestedField(obj.Object, "status")
	job, err := JobOf(obj)
	require.NoError(t, err)
	return job
}

// applies plays the API server's server-side apply, which client-go's fake
// does only on objects that exist already, and records each.
func applies(got *[]clienttesting.PatchActionImpl) func(*dynamicfake.FakeDynamicClient) {
	return func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			patch := a.(clienttesting.PatchActionImpl)
			if patch.GetPatchType() != types.ApplyPatchType {
				return false, nil, nil
			}
			*got = append(*got, patch)
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(patch.GetPatch()); err != nil {
				return true, nil, err
			}
			return true, obj, dyn.Tracker().Create(a.GetResource(), obj, a.GetNamespace())
		})
	}
}

// verbs are the verbs of the actions on AppWrappers, in order.
func verbs(dyn *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range dyn.Actions() {
		if a.GetResource() == appWrappers {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

func TestSubmitCreatesTheJobByServerSideApply(t *testing.T) {
	var got []clienttesting.PatchActionImpl
	client := cluster(t, applies(&got))
	job := submitted(t)
	done, err := client.Submit(context.Background(), job, false)
	require.NoError(t, err)
	require.Equal(t, Submission{}, done)
	require.Len(t, got, 1)
	require.Equal(t, "ml", got[0].GetNamespace())
	require.Equal(t, "demo", got[0].GetName())
	require.Equal(t, FieldManager, got[0].PatchOptions.FieldManager)
	require.True(t, *got[0].PatchOptions.Force)
	want, err := json.Marshal(job.Object.Object)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got[0].GetPatch()))
}

func TestSubmitRefusesAJobOfTheSameNameThatHasNotFinished(t *testing.T) {
	var got []clienttesting.PatchActionImpl
	client := cluster(t, applies(&got), appWrapper("{phase: Running, conditions: [{type: PodsReady, status: 'True'}]}"),
		pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod))
	_, err := client.Submit(context.Background(), submitted(t), false)
	require.EqualError(t, err, `AppWrapper "demo" exists in namespace "ml" already, and has not finished: Running, pods ready 2/2; `+
		`wait for it to finish (generator status demo -n ml), delete it (generator delete demo -n ml), or submit with --force to delete it and submit anew`)
	require.ErrorAs(t, err, &Busy{})
	require.Empty(t, got)
}

func TestSubmitReplacesAFinishedJob(t *testing.T) {
	for _, tc := range []struct {
		phase string
		force bool
		want  State
	}{{"Succeeded", false, Succeeded}, {"Failed", false, Failed}, {"Running", true, Admitted}} {
		t.Run(tc.phase, func(t *testing.T) {
			var got []clienttesting.PatchActionImpl
			var deleted []clienttesting.DeleteActionImpl
			client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
				applies(&got)(dyn)
				dyn.PrependReactor("delete", "appwrappers", func(a clienttesting.Action) (bool, runtime.Object, error) {
					deleted = append(deleted, a.(clienttesting.DeleteActionImpl))
					return false, nil, nil
				})
			}, appWrapper("{phase: "+tc.phase+"}"))
			done, err := client.Submit(context.Background(), submitted(t), tc.force)
			require.NoError(t, err)
			require.Equal(t, Submission{Replaced: tc.want}, done)
			require.Len(t, deleted, 1)
			require.Equal(t, metav1.DeletePropagationForeground, *deleted[0].DeleteOptions.PropagationPolicy)
			require.Equal(t, types.UID("aw-uid"), *deleted[0].DeleteOptions.Preconditions.UID)
			require.Len(t, got, 1)
		})
	}
}

// The old job goes only once its controller has deleted what it made: the
// new one is applied after it is gone.
func TestSubmitWaitsUntilTheOldJobIsGone(t *testing.T) {
	var got []clienttesting.PatchActionImpl
	var dyn *dynamicfake.FakeDynamicClient
	client := cluster(t, func(fake *dynamicfake.FakeDynamicClient) {
		dyn = fake
		applies(&got)(dyn)
		dyn.PrependReactor("delete", "appwrappers", func(a clienttesting.Action) (bool, runtime.Object, error) {
			obj, err := dyn.Tracker().Get(appWrappers, "ml", "demo")
			require.NoError(t, err)
			terminating := obj.(*unstructured.Unstructured).DeepCopy()
			terminating.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
			return true, nil, dyn.Tracker().Update(appWrappers, terminating, "ml")
		})
		collects(t, dyn, appWrappers, "demo")
	}, appWrapper("{phase: Succeeded}"))
	done, err := client.Submit(context.Background(), submitted(t), false)
	require.NoError(t, err)
	require.Equal(t, Submission{Replaced: Succeeded}, done)
	require.Equal(t, []string{"get", "get", "delete", "list", "watch", "patch"}, verbs(dyn))
}

func TestSubmitGivesUpWaitingForAJobThatIsNotDeleted(t *testing.T) {
	var got []clienttesting.PatchActionImpl
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		applies(&got)(dyn)
		dyn.PrependReactor("delete", "appwrappers", func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, nil
		})
	}, appWrapper("{phase: Failed}"))
	client.DeletionWait = 150 * time.Millisecond
	_, err := client.Submit(context.Background(), submitted(t), false)
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" is still being deleted after 150ms (finalizers: workload.codeflare.dev/finalizer): `+
		`what should delete it may be down; see it with generator status demo -n ml`)
	require.Empty(t, got)
}

func TestSubmitWhatTheAPIServerRefuses(t *testing.T) {
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("patch", "appwrappers", func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInvalid(appWrappers.GroupVersion().WithKind("AppWrapper").GroupKind(), "demo", nil)
		})
	})
	_, err := client.Submit(context.Background(), submitted(t), false)
	require.EqualError(t, err, `submitting the AppWrapper "demo" in namespace "ml": AppWrapper.workload.codeflare.dev "demo" is invalid`)
}

func TestSubmitABareJobSetOrTrainJob(t *testing.T) {
	var got []clienttesting.PatchActionImpl
	client := cluster(t, applies(&got), trainJob(false, "{conditions: [{type: Suspended, status: 'False', reason: Resumed}]}"),
		pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, readyPod), pod("demo-node-0-2", jobSetPods, readyPod))
	_, err := client.Submit(context.Background(), rendered(t, trainJob(true, "{}")), false)
	require.EqualError(t, err, `TrainJob "demo" exists in namespace "ml" already, and has not finished: Running, pods ready 3/3; `+
		`wait for it to finish (generator status demo -n ml), delete it (generator delete demo -n ml), or submit with --force to delete it and submit anew`)
	require.Empty(t, got)

	var deleted []string
	client = cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		applies(&got)(dyn)
		dyn.PrependReactor("delete", "jobsets", func(a clienttesting.Action) (bool, runtime.Object, error) {
			deleted = append(deleted, a.(clienttesting.DeleteActionImpl).GetName())
			return false, nil, nil
		})
	}, jobSet(false, "{conditions: [{type: Failed, status: 'True', reason: FailedJobs}]}"))
	done, err := client.Submit(context.Background(), rendered(t, jobSet(true, "{}")), false)
	require.NoError(t, err)
	require.Equal(t, Submission{Replaced: Failed}, done)
	require.Equal(t, []string{"demo"}, deleted)
	require.Len(t, got, 1)
	require.Equal(t, jobSets, got[0].GetResource())
}

// A job of the same name that another job made (the JobSet of an AppWrapper
// or of a TrainJob) is not replaced, even with force.
func TestSubmitLeavesAnotherJobsPartAlone(t *testing.T) {
	var got []clienttesting.PatchActionImpl
	client := cluster(t, applies(&got), `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: demo
  namespace: ml
  ownerReferences: [{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: demo, uid: tj-uid, controller: true}]
`)
	job := rendered(t, `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: demo, namespace: ml}
`)
	_, err := client.Submit(context.Background(), job, true)
	require.EqualError(t, err, `the JobSet "demo" in namespace "ml" is a part of TrainJob "demo", which made it: submitting would replace a part of another job; choose another jobName`)
	require.Empty(t, got)
}
