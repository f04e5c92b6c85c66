package cluster

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// sameNames are jobs of one name, dup: a PyTorchJob submitted alone, and an
// AppWrapper with the JobSet it made of its name; and an AppWrapper solo
// with the PyTorchJob it made of its name.
const sameNames = `
{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: dup, namespace: ml, uid: p-uid}}
---
{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, metadata: {name: dup, namespace: ml, uid: a-uid}}
---
{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: dup, namespace: ml, uid: j-uid,
  ownerReferences: [{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, name: dup, uid: a-uid, controller: true}]}}
---
{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, metadata: {name: solo, namespace: ml, uid: s-uid}}
---
{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: solo, namespace: ml, uid: sp-uid,
  ownerReferences: [{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, name: solo, uid: s-uid, controller: true}]}}`

// A name that jobs of two kinds have is refused, with both and how to name
// each; the job an AppWrapper made of its name is part of it. KIND/NAME
// names one, as kubectl takes it.
func TestFindTellsJobsOfOneNameApart(t *testing.T) {
	client := fake(t, clustertest.Fake{Objects: sameNames})
	_, err := client.Find(context.Background(), "ml", "dup")
	require.EqualError(t, err, `2 jobs in namespace "ml" are named "dup", AppWrapper dup and PyTorchJob dup; name one with its kind: appwrapper/dup or pytorchjob/dup`)
	require.ErrorAs(t, err, &Ambiguous{})
	for arg, want := range map[string]Ref{
		"solo":                                   {Kind: "AppWrapper", Namespace: "ml", Name: "solo"},
		"pytorchjob/dup":                         {Kind: "PyTorchJob", Namespace: "ml", Name: "dup"},
		"PyTorchJobs/dup":                        {Kind: "PyTorchJob", Namespace: "ml", Name: "dup"},
		"pytorchjob.kubeflow.org/dup":            {Kind: "PyTorchJob", Namespace: "ml", Name: "dup"},
		"AppWrapper/dup":                         {Kind: "AppWrapper", Namespace: "ml", Name: "dup"},
		"appwrappers.workload.codeflare.dev/dup": {Kind: "AppWrapper", Namespace: "ml", Name: "dup"},
		// Named by its kind, the AppWrapper's part is found itself.
		"jobset/dup": {Kind: "JobSet", Namespace: "ml", Name: "dup"},
	} {
		got, err := client.Find(context.Background(), "ml", arg)
		require.NoError(t, err, arg)
		require.Equal(t, want, got, arg)
	}
}

// A KIND/NAME that names no kind, or no name, is refused before the cluster
// is asked; a kind named is looked for alone.
func TestFindWhatNamesNoJob(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"pod/dup", "pod/dup: pod is not a job kind (the kinds are AppWrapper, TrainJob, PyTorchJob, JobSet, PyTorchTrainingJob and DeepSpeedJob); name the job as NAME, or as KIND/NAME with one of them"},
		{"pytorchjb/dup", "pytorchjb/dup: pytorchjb is not a job kind (the kinds are AppWrapper, TrainJob, PyTorchJob, JobSet, PyTorchTrainingJob and DeepSpeedJob); did you mean pytorchjob/dup?"},
		{"pytorchjob/", "pytorchjob/: give a job as NAME, or as KIND/NAME (as in pytorchjob/NAME)"},
		{"/dup", "/dup: give a job as NAME, or as KIND/NAME (as in pytorchjob/NAME)"},
		{"pytorchjob/dup/0", "pytorchjob/dup/0: give a job as NAME, or as KIND/NAME (as in pytorchjob/NAME)"},
	} {
		client := fake(t, clustertest.Fake{Objects: sameNames})
		_, err := client.Find(context.Background(), "ml", tc.arg)
		require.EqualError(t, err, tc.want)
		require.ErrorAs(t, err, &BadName{})
		require.Empty(t, client.Dynamic.(*dynamicfake.FakeDynamicClient).Actions(), tc.arg)
	}

	client := fake(t, clustertest.Fake{Objects: sameNames, Without: []string{"batch.tensorstack.dev/v1beta1"}})
	_, err := client.Find(context.Background(), "ml", "PyTorchJob/dupe")
	require.EqualError(t, err, `no PyTorchJob "dupe" in namespace "ml"; PyTorchJobs here: dup, solo; did you mean "dup"? Otherwise check the namespace (-n NAMESPACE)`)
	require.ErrorAs(t, err, &NoSuchJob{})
	_, err = client.Find(context.Background(), "ml", "deepspeedjob/dup")
	require.EqualError(t, err, `this cluster does not serve DeepSpeedJobs (batch.tensorstack.dev/v1beta1): T9k's job controller is not installed, so there is no such job here; check --context, or ask an administrator to install it`)
}

// An error of the API server names the kind looked for with its article.
func TestFindAnError(t *testing.T) {
	client := fake(t, clustertest.Fake{React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("get", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
		})
	}})
	_, err := client.Find(context.Background(), "ml", "demo")
	require.EqualError(t, err, `looking for an AppWrapper "demo" in namespace "ml": Internal error occurred: etcd is down`)
	require.Equal(t, "a PyTorchJob", Indefinite("PyTorchJob"))
}

// Submit says which jobs of other kinds have the name of the job it
// submits, and submits it; not the job it made of its name before.
func TestSubmitBesideJobsOfItsName(t *testing.T) {
	var got []clienttesting.PatchActionImpl
	client := cluster(t, applies(&got), pyTorchJob("{}"))
	job := submitted(t)
	done, err := client.Submit(context.Background(), job, false)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, []Ref{{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"}}, done.Namesakes)
	require.Equal(t, `namespace "ml" has a PyTorchJob of that name too; status, logs, stop, resume and delete need the kind to tell them apart (appwrapper/demo or pytorchjob/demo), or choose another jobName`,
		done.SameName(job.Ref()))

	component := strings.Replace(pyTorchJob("{}"), "uid: ptj-uid", "uid: ptj-uid\n  ownerReferences: [{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, name: demo, uid: aw-uid, controller: true}]", 1)
	client = cluster(t, applies(&got), appWrapper("{phase: Succeeded}"), component)
	done, err = client.Submit(context.Background(), job, false)
	require.NoError(t, err)
	require.Equal(t, Submission{Replaced: Succeeded}, done)
	require.Empty(t, done.SameName(job.Ref()))
}

// Completion offers the names of the jobs there that begin with what is
// typed: the generator's, else all; a job another made is part of it.
func TestComplete(t *testing.T) {
	client := fake(t, clustertest.Fake{Objects: `
{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, metadata: {name: llama-8b, namespace: ml, uid: a-uid, annotations: {torchwrap.dev/generator-version: 0.1.0}}}
---
{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: llama-8b, namespace: ml, uid: p-uid, annotations: {torchwrap.dev/generator-version: 0.1.0},
  ownerReferences: [{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, name: llama-8b, uid: a-uid, controller: true}]}}
---
{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: llama-70b, namespace: ml, uid: p2-uid, annotations: {torchwrap.dev/generator-version: 0.1.0}}}
---
{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: lora, namespace: ml, uid: j-uid}}
---
{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: elsewhere, namespace: other, uid: e-uid, annotations: {torchwrap.dev/generator-version: 0.1.0}}}`})
	for typed, want := range map[string][]string{
		"":               {"llama-70b", "llama-8b"},
		"llama-8":        {"llama-8b"},
		"lo":             {"lora"},
		"x":              nil,
		"pytorchjob/":    {"pytorchjob/llama-70b"},
		"PyTorchJobs/ll": {"PyTorchJobs/llama-70b"},
		"jobset/":        {"jobset/lora"},
		"pod/":           nil,
	} {
		got, err := client.Complete(context.Background(), "ml", typed)
		require.NoError(t, err, typed)
		require.Equal(t, want, got, "%q", typed)
	}

	client = fake(t, clustertest.Fake{React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, &url.Error{Op: "Get", URL: "https://fake", Err: errors.New("connection refused")}
		})
	}})
	got, err := client.Complete(context.Background(), "ml", "")
	require.ErrorAs(t, err, &Unreachable{})
	require.Empty(t, got)
}

// The roles of a job's pods, and each pod by role and index, in the order
// of their node ranks; a pod whose place is not known has none.
func TestRoles(t *testing.T) {
	member := func(role, index string) string {
		return "{workload.codeflare.dev/appwrapper: demo, training.kubeflow.org/replica-type: " + role + ", training.kubeflow.org/replica-index: '" + index + "'}"
	}
	client := cluster(t, nil, appWrapper("{phase: Running}"),
		pod("demo-worker-1", member("worker", "1"), readyPod), pod("demo-master-0", member("master", "0"), readyPod),
		pod("demo-worker-0", member("worker", "0"), readyPod), pod("demo-sidecar", awPods, readyPod))
	roles, err := client.Roles(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Equal(t, []string{"master", "master-0", "worker", "worker-0", "worker-1"}, roles)
	_, err = client.Roles(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "gone"})
	require.ErrorAs(t, err, &NotFound{})
}
