package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// The resources of the jobs that tests change behind the client's back.
var (
	appWrappers = schema.GroupVersionResource{Group: "workload.codeflare.dev", Version: "v1beta2", Resource: "appwrappers"}
	jobSets     = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	trainJobs   = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
)
