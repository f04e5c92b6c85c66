package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	sigsyaml "sigs.k8s.io/yaml"
)

// object reads an object written in YAML as the cluster sends it: decoded
// from JSON, with its integers as int64.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := sigsyaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return obj
}

// served is what the fake cluster's discovery lists: every API the
// generator's jobs use.
var served = []*metav1.APIResourceList{
	{GroupVersion: "workload.codeflare.dev/v1beta2", APIResources: []metav1.APIResource{{Name: "appwrappers", Kind: "AppWrapper", Namespaced: true}}},
	{GroupVersion: "kubeflow.org/v1", APIResources: []metav1.APIResource{{Name: "pytorchjobs", Kind: "PyTorchJob", Namespaced: true}}},
	{GroupVersion: "kueue.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "workloads", Kind: "Workload", Namespaced: true}}},
	{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}},
}

// listKinds are the list kinds of the resources the fake serves.
var listKinds = map[schema.GroupVersionResource]string{
	appWrappers:   "AppWrapperList",
	pyTorchJobs:   "PyTorchJobList",
	trainingJobs:  "PyTorchTrainingJobList",
	deepSpeedJobs: "DeepSpeedJobList",
	workloads:     "WorkloadList",
	pods:          "PodList",
}

// fakeClient is a Client on client-go's fake dynamic client, holding the
// objects, each written in YAML.
func fakeClient(t *testing.T, manifests ...string) (*Client, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	var objs []runtime.Object
	for _, m := range manifests {
		objs = append(objs, object(t, m))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: served}}
	return &Client{Dynamic: dyn, Discovery: disc, Namespace: "ml", Server: "https://fake"}, dyn
}
