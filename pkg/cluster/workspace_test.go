package cluster

import (
	"context"
	"os"
	"path/filepath"
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

	"github.com/torchwrap/generator/pkg/workspace"
)

// withWorkspace is the demo job shipping a packed folder of one file, with
// the annotations the chart writes for it.
func withWorkspace(t *testing.T, program string) *Job {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte(program), 0o644))
	p, err := workspace.Pack(dir)
	require.NoError(t, err)
	job := submitted(t)
	job.Object.SetAnnotations(map[string]string{
		workspace.DigestAnnotation: p.Digest, workspace.DigestAnnotation + "-parts": "1",
		workspace.DigestAnnotation + "-files": "1", workspace.DigestAnnotation + "-bytes": "9", workspace.DigestAnnotation + "-folder": dir,
	})
	job.Carry(p.ConfigMaps("demo", ""))
	return job
}

// appliesWithUID plays server-side apply as applies does, giving the
// object a UID as the API server does.
func appliesWithUID(dyn *dynamicfake.FakeDynamicClient) {
	dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patch := a.(clienttesting.PatchActionImpl)
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(patch.GetPatch()); err != nil {
			return true, nil, err
		}
		obj.SetUID("aw-uid")
		return true, obj, dyn.Tracker().Create(a.GetResource(), obj, a.GetNamespace())
	})
}

// leave makes the ConfigMap of an older workspace of the job demo, owned
// by owner.
func leave(t *testing.T, client *Client, owner metav1.OwnerReference) {
	cm := withWorkspace(t, "print('old')\n").Workspace[0]
	cm.SetOwnerReferences([]metav1.OwnerReference{owner})
	_, err := client.Dynamic.Resource(configMaps).Namespace("ml").Create(context.Background(), cm, metav1.CreateOptions{})
	require.NoError(t, err)
}

func getConfigMap(t *testing.T, client *Client, name string) (*unstructured.Unstructured, error) {
	return client.Dynamic.Resource(configMaps).Namespace("ml").Get(context.Background(), name, metav1.GetOptions{})
}

func TestSubmitShipsTheWorkspaceOwnedByTheJob(t *testing.T) {
	client := cluster(t, appliesWithUID)
	job := withWorkspace(t, "print(1)\n")
	_, err := client.Submit(context.Background(), job, false)
	require.NoError(t, err)
	cm, err := getConfigMap(t, client, "demo-workspace-0")
	require.NoError(t, err)
	require.Equal(t, []metav1.OwnerReference{{APIVersion: "workload.codeflare.dev/v1beta2", Kind: "AppWrapper", Name: "demo", UID: "aw-uid"}}, cm.GetOwnerReferences())
	require.Equal(t, job.Workspace[0].Object["binaryData"], cm.Object["binaryData"])

	st, err := client.Status(context.Background(), job.Ref())
	require.NoError(t, err)
	require.NotNil(t, st.Workspace)
	require.Equal(t, []string{"demo-workspace-0"}, st.Workspace.ConfigMaps)
	require.Regexp(t, `^sha256:[0-9a-f]{12} \(1 files, 9 B\) from /`, st.Workspace.Line())

	client.Poll = time.Millisecond
	_, err = client.Delete(context.Background(), job.Ref(), false)
	require.NoError(t, err)
	_, err = getConfigMap(t, client, "demo-workspace-0")
	require.True(t, apierrors.IsNotFound(err), "delete deletes the workspace: %v", err)
}

func TestSubmitReplacesAWorkspaceLeftBehind(t *testing.T) {
	client := cluster(t, appliesWithUID)
	leave(t, client, metav1.OwnerReference{APIVersion: "workload.codeflare.dev/v1beta2", Kind: "AppWrapper", Name: "demo", UID: "gone-uid"})
	job := withWorkspace(t, "print('new')\n")
	_, err := client.Submit(context.Background(), job, false)
	require.NoError(t, err)
	cm, err := getConfigMap(t, client, "demo-workspace-0")
	require.NoError(t, err)
	require.Equal(t, job.Workspace[0].Object["binaryData"], cm.Object["binaryData"], "the new workspace, not the one left")
	require.Equal(t, types.UID("aw-uid"), cm.GetOwnerReferences()[0].UID)
}

func TestSubmitRefusesAWorkspaceNameThatAnotherJobHolds(t *testing.T) {
	client := cluster(t, appliesWithUID, withoutQueue(pyTorchJob("{}")))
	leave(t, client, metav1.OwnerReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "demo", UID: "ptj-uid"})
	job := withWorkspace(t, "print('new')\n")
	_, err := client.Submit(context.Background(), job, false)
	require.EqualError(t, err, `the ConfigMap "demo-workspace-0", where this job's workspace goes, exists in namespace "ml", and holds the workspace of PyTorchJob "demo"; choose another jobName; nothing was submitted`)
	_, err = client.Dynamic.Resource(appWrappers).Namespace("ml").Get(context.Background(), "demo", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing was submitted")
}

func TestSubmitDeletesTheJobAgainWhenItsWorkspaceCannotBeMade(t *testing.T) {
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		appliesWithUID(dyn)
		dyn.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(configMaps.GroupResource(), "demo-workspace-0", nil)
		})
	})
	_, err := client.Submit(context.Background(), withWorkspace(t, "print(1)\n"), false)
	require.ErrorContains(t, err, "creating the ConfigMap demo-workspace-0 of the workspace")
	require.ErrorContains(t, err, `the AppWrapper "demo" in namespace "ml", submitted before it, was deleted again`)
	done := verbs(client.Dynamic.(*dynamicfake.FakeDynamicClient))
	require.Equal(t, []string{"patch", "delete"}, done[len(done)-2:], "applied, then deleted")
}

// A user who may not delete ConfigMaps still deletes the job: the garbage
// collector deletes its workspace after it.
func TestDeleteLeavesAWorkspaceItMayNotDeleteToTheCollector(t *testing.T) {
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		appliesWithUID(dyn)
		dyn.PrependReactor("delete", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(configMaps.GroupResource(), "demo-workspace-0", nil)
		})
	})
	job := withWorkspace(t, "print(1)\n")
	_, err := client.Submit(context.Background(), job, false)
	require.NoError(t, err)
	_, err = client.Delete(context.Background(), job.Ref(), false)
	require.NoError(t, err)
	_, err = getConfigMap(t, client, "demo-workspace-0")
	require.NoError(t, err, "left to the garbage collector")
}
