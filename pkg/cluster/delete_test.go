package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// collects plays the garbage collector: the first watch of a resource
// (opened after the list it watches from) is told that the named objects
// are deleted.
func collects(t *testing.T, dyn *dynamicfake.FakeDynamicClient, resource schema.GroupVersionResource, names ...string) {
	var once sync.Once
	dyn.PrependWatchReactor(resource.Resource, func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := dyn.Tracker().Watch(action.GetResource(), action.GetNamespace(), action.(clienttesting.WatchActionImpl).ListOptions)
		once.Do(func() {
			go func() {
				for _, name := range names {
					require.NoError(t, dyn.Tracker().Delete(resource, "ml", name))
				}
			}()
		})
		return true, w, err
	})
}

// The job is deleted in the foreground, and Delete waits until the job,
// then its pods, are gone, watching each after one list: the garbage
// collector deletes them once they are watched.
func TestDeleteWaitsForThePods(t *testing.T) {
	var deleted []clienttesting.DeleteActionImpl
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("delete", "appwrappers", func(a clienttesting.Action) (bool, runtime.Object, error) {
			deleted = append(deleted, a.(clienttesting.DeleteActionImpl))
			return true, nil, nil
		})
		collects(t, dyn, appWrappers, "demo")
		collects(t, dyn, pods, "demo-master-0", "demo-worker-0")
	}, appWrapper("{phase: Running}"), pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod))
	done, err := client.Delete(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, true)
	require.NoError(t, err)
	require.Len(t, deleted, 1)
	require.Equal(t, metav1.DeletePropagationForeground, *deleted[0].DeleteOptions.PropagationPolicy)
	require.Equal(t, types.UID("aw-uid"), *deleted[0].DeleteOptions.Preconditions.UID)
	require.Equal(t, `deleted AppWrapper "demo" in namespace "ml" (it was Running, with 2 pods), and what it made`, done.String())
	var asked []string
	for _, a := range client.Dynamic.(*dynamicfake.FakeDynamicClient).Actions() {
		asked = append(asked, a.GetVerb()+" "+a.GetResource().Resource)
	}
	require.Equal(t, []string{"get appwrappers", "list workloads", "list workloads", "list pods", "delete appwrappers",
		"list appwrappers", "watch appwrappers", "list pods", "watch pods"}, asked)
	list, err := client.Dynamic.Resource(pods).Namespace("ml").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, list.Items)
}

// A watch whose version is gone (the job was deleted while the cluster
// compacted its history) has the job listed again.
func TestDeleteListsAgainWhenItsVersionIsGone(t *testing.T) {
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		// Deleted in the foreground: still there, for now.
		dyn.PrependReactor("delete", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
		var once sync.Once
		dyn.PrependWatchReactor("appwrappers", func(a clienttesting.Action) (bool, watch.Interface, error) {
			expired := false
			once.Do(func() {
				require.NoError(t, dyn.Tracker().Delete(appWrappers, "ml", "demo"))
				expired = true
			})
			if !expired {
				return false, nil, nil
			}
			return true, nil, apierrors.NewResourceExpired("too old resource version")
		})
	}, withoutQueue(appWrapper("{phase: Succeeded}")))
	_, err := client.Delete(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, true)
	require.NoError(t, err)
	var asked []string
	for _, a := range client.Dynamic.(*dynamicfake.FakeDynamicClient).Actions() {
		if a.GetResource().Resource == "appwrappers" {
			asked = append(asked, a.GetVerb())
		}
	}
	require.Equal(t, []string{"get", "delete", "list", "watch", "list", "watch"}, asked)
}

func TestDeleteWithoutWaiting(t *testing.T) {
	client := cluster(t, nil, withoutQueue(pyTorchJob("{}")))
	done, err := client.Delete(context.Background(), Ref{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"}, false)
	require.NoError(t, err)
	require.Equal(t, `deleting PyTorchJob "demo" in namespace "ml" (it was Admitted, with no pods) in the foreground, what it made first; not waiting until it is gone (--wait=false)`, done.String())
	var verbs []string
	for _, a := range client.Dynamic.(*dynamicfake.FakeDynamicClient).Actions() {
		if a.GetResource().Resource == "pytorchjobs" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	require.Equal(t, []string{"get", "delete"}, verbs)
}

func TestDeleteErrors(t *testing.T) {
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("delete", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "appwrappers"}, "demo", errors.New("RBAC"))
		})
	}, appWrapper("{phase: Running}"))
	_, err := client.Delete(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, true)
	require.EqualError(t, err, `you may not delete appwrappers.workload.codeflare.dev in namespace "ml" (RBAC), which it takes to delete the job; ask an administrator for the verb delete on appwrappers.workload.codeflare.dev there`)
	_, err = client.Delete(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "gone"}, true)
	require.ErrorAs(t, err, &NotFound{})
}

// Pods the user's role does not let it read are neither counted as none
// nor waited for, and it says so.
func TestDeletionOfPodsNotRead(t *testing.T) {
	d := Deletion{Ref: Ref{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"}, State: Running, Pods: -1, Waited: true}
	require.Equal(t, `deleted PyTorchJob "demo" in namespace "ml" (it was Running, its pods not read, nor waited for), and what it made`, d.String())
}
