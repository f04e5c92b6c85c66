package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// object reads an object written in YAML as the cluster sends it.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	return clustertest.Object(t, manifest)
}

// fake is a Client of a fake cluster, in namespace ml.
func fake(t *testing.T, f clustertest.Fake) *Client {
	t.Helper()
	dyn, disc := f.Clients(t)
	return &Client{Dynamic: dyn, Watches: dyn, Discovery: disc, PodSource: clustertest.Pods{Dynamic: dyn}, ObjectSource: clustertest.Objects{Dynamic: dyn}, Namespace: "ml", Server: "https://fake"}
}

// The resources of the jobs that tests change behind the client's back.
var (
	appWrappers = schema.GroupVersionResource{Group: "workload.codeflare.dev", Version: "v1beta2", Resource: "appwrappers"}
	jobSets     = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	trainJobs   = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
)
