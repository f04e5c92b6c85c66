package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// A right is written as kubectl auth can-i takes it, in its namespace, in
// all of them, or on the cluster.
func TestRightString(t *testing.T) {
	for _, c := range []struct {
		right Right
		want  string
	}{
		{Right{Verb: "patch", Resource: workloadsResource, Namespace: "team-a"}, "patch workloads.kueue.x-k8s.io in namespace team-a"},
		{Right{Verb: "get", Resource: podLogsResource, Namespace: "team-a"}, "get pods/log in namespace team-a"},
		{Right{Verb: "list", Resource: podsResource}, "list pods in all namespaces"},
		{Right{Verb: "list", Resource: schema.GroupResource{Resource: "nodes"}, Namespace: "team-a"}, "list nodes"},
		{ProfileRight("kube-public"), "get configmaps torchwrap-profile in namespace kube-public"},
	} {
		require.Equal(t, c.want, c.right.String())
	}
}

// What a role kept from a command is one line: each thing once, each right
// once.
func TestDeniedString(t *testing.T) {
	var d Denied
	require.Empty(t, d.String())
	d.Add("the counts of the pods", Right{Verb: "list", Resource: podsResource, Namespace: "a"})
	require.Equal(t, "the counts of the pods, as your role does not allow it (RBAC); the right that would: list pods in namespace a (generator access tells each command's)", d.String())
	d.Add("the counts of the pods", Right{Verb: "list", Resource: podsResource, Namespace: "a"})
	d.Add("why a job waits", Right{Verb: "list", Resource: workloadsResource, Namespace: "a"})
	require.Equal(t, "the counts of the pods, why a job waits, as your role does not allow it (RBAC); the rights that would: list pods in namespace a, list workloads.kueue.x-k8s.io in namespace a (generator access tells each command's)", d.String())
}

// The table of rights: the kinds named are the job's; a kind the
// generator does not make is an error; every command needs or is helped
// by some right, and the rights to create are those of the job's kinds.
func TestUses(t *testing.T) {
	_, err := Uses("a", "MPIJob")
	require.EqualError(t, err, "the generator makes no MPIJob: the kinds are AppWrapper, TrainJob, PyTorchJob, JobSet, PyTorchTrainingJob, DeepSpeedJob")
	uses, err := Uses("a", "AppWrapper", "PyTorchJob")
	require.NoError(t, err)
	for _, u := range uses {
		require.NotEmpty(t, append(u.Needs, u.Helps...), u.Command)
		if u.Command == "check" {
			require.Equal(t, []Right{
				{Verb: "create", Resource: schema.GroupResource{Group: "workload.codeflare.dev", Resource: "appwrappers"}, Namespace: "a"},
				{Verb: "create", Resource: schema.GroupResource{Group: "kubeflow.org", Resource: "pytorchjobs"}, Namespace: "a"},
			}, u.Needs)
		}
	}
}

// MayAll asks one SelfSubjectAccessReview a right, with its namespace,
// subresource and name, and gives the answers in the rights' order.
func TestMayAll(t *testing.T) {
	var asked []map[string]any
	client := fake(t, clustertest.Fake{React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
			review := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
			attributes, _, _ := unstructured.NestedMap(review.Object, "spec", "resourceAttributes")
			asked = append(asked, attributes)
			require.NoError(t, unstructured.SetNestedField(review.Object, attributes["verb"] == "get", "status", "allowed"))
			return true, review, nil
		})
	}})
	answers, err := client.MayAll(context.Background(), []Right{
		{Verb: "get", Resource: podLogsResource, Namespace: "a"},
		{Verb: "list", Resource: schema.GroupResource{Resource: "nodes"}, Namespace: "a"},
		ProfileRight("kube-public"),
	})
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true}, answers)
	require.ElementsMatch(t, []map[string]any{
		{"verb": "get", "group": "", "resource": "pods", "subresource": "log", "namespace": "a"},
		{"verb": "list", "group": "", "resource": "nodes"},
		{"verb": "get", "group": "", "resource": "configmaps", "namespace": "kube-public", "name": "torchwrap-profile"},
	}, asked)
}
