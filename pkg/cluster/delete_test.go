package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// The job is deleted in the foreground, and Delete waits until the job,
// then its pods, are gone: the garbage collector is played by a reactor
// that deletes the job at the third reading, and its pods at the fifth.
func TestDeleteWaitsForThePods(t *testing.T) {
	var deleted []clienttesting.DeleteActionImpl
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("delete", "appwrappers", func(a clienttesting.Action) (bool, runtime.Object, error) {
			deleted = append(deleted, a.(clienttesting.DeleteActionImpl))
			return true, nil, nil
		})
		gets, lists := 0, 0
		dyn.PrependReactor("get", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) {
			if gets++; gets == 3 {
				require.NoError(t, dyn.Tracker().Delete(appWrappers, "ml", "demo"))
			}
			return false, nil, nil
		})
		dyn.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			if lists++; lists == 3 {
				require.NoError(t, dyn.Tracker().Delete(pods, "ml", "demo-master-0"))
				require.NoError(t, dyn.Tracker().Delete(pods, "ml", "demo-worker-0"))
			}
			return false, nil, nil
		})
	}, appWrapper("{phase: Running}"), pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod))
	client.Poll = time.Millisecond
	done, err := client.Delete(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, true)
	require.NoError(t, err)
	require.Len(t, deleted, 1)
	require.Equal(t, metav1.DeletePropagationForeground, *deleted[0].DeleteOptions.PropagationPolicy)
	require.Equal(t, types.UID("aw-uid"), *deleted[0].DeleteOptions.Preconditions.UID)
	require.Equal(t, `deleted AppWrapper "demo" in namespace "ml" (it was Running, with 2 pods), and what it made`, done.String())
	list, err := client.Dynamic.Resource(pods).Namespace("ml").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, list.Items)
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
