// Package clustertest is a fake cluster for the tests of pkg/cluster and
// pkg/cluster/preflight: client-go's fake clients, with the APIs and the
// objects a job needs. Tests alone import it.
package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	discoveryfake "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	sigsyaml "sigs.k8s.io/yaml"
)

// queueLabel is Kueue's queue label, whose jobs its webhook suspends.
const queueLabel = "kueue.x-k8s.io/queue-name"

// Object reads an object written in YAML as the cluster sends it: decoded
// from JSON, with its integers as int64.
func Object(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := sigsyaml.YAMLToJSON([]byte(manifest))
	require.NoError(t, err)
	obj := &unstructured.Unstructured{}
	require.NoError(t, obj.UnmarshalJSON(data))
	return obj
}

// Fake is a cluster of client-go's fake clients, with the APIs of a
// cluster with Kueue, AppWrapper, the training operator, JobSet, Kubeflow
// Trainer and Multus, BaseObjects, and Objects (YAML documents). Kueue's
// webhook is played by a reactor that suspends what is created with a queue
// label, unless Unmanaged; the access review answers allowed, unless Denied.
type Fake struct {
	Objects   string
	Unmanaged bool
	Denied    bool
	// Without drops the APIs of these group versions.
	Without []string
	// React adds reactors before the others.
	React func(*dynamicfake.FakeDynamicClient)
}

// Resources are the fake cluster's APIs, by group version: resource → kind.
var Resources = map[string]map[string]string{
	"v1": {"pods": "Pod", "events": "Event", "secrets": "Secret", "configmaps": "ConfigMap", "persistentvolumeclaims": "PersistentVolumeClaim", "serviceaccounts": "ServiceAccount", "namespaces": "Namespace", "nodes": "Node",
		"resourcequotas": "ResourceQuota", "limitranges": "LimitRange"},
	"scheduling.k8s.io/v1":    {"priorityclasses": "PriorityClass"},
	"storage.k8s.io/v1":       {"storageclasses": "StorageClass"},
	"authorization.k8s.io/v1": {"selfsubjectaccessreviews": "SelfSubjectAccessReview"},
	"kueue.x-k8s.io/v1beta1": {"localqueues": "LocalQueue", "clusterqueues": "ClusterQueue", "workloadpriorityclasses": "WorkloadPriorityClass", "workloads": "Workload", "resourceflavors": "ResourceFlavor", "topologies": "Topology", "cohorts": "Cohort",
		"admissionchecks": "AdmissionCheck", "multikueueconfigs": "MultiKueueConfig", "multikueueclusters": "MultiKueueCluster"},
	"workload.codeflare.dev/v1beta2": {"appwrappers": "AppWrapper"},
	"kubeflow.org/v1":                {"pytorchjobs": "PyTorchJob"},
	"batch.tensorstack.dev/v1beta1":  {"pytorchtrainingjobs": "PyTorchTrainingJob", "deepspeedjobs": "DeepSpeedJob"},
	"jobset.x-k8s.io/v1alpha2":       {"jobsets": "JobSet"},
	"trainer.kubeflow.org/v1alpha1":  {"trainjobs": "TrainJob", "clustertrainingruntimes": "ClusterTrainingRuntime"},
	"k8s.cni.cncf.io/v1":             {"network-attachment-definitions": "NetworkAttachmentDefinition"},
}

// BaseObjects are what a job of the helloworld example needs.
const BaseObjects = `
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-node-0}
status: {allocatable: {cpu: 64, memory: 1Ti, nvidia.com/gpu: 8}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: default-queue, namespace: ml}
spec: {clusterQueue: cluster-queue}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: research, namespace: ml}
spec: {clusterQueue: cluster-queue}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {name: cpu, nominalQuota: 512}
      - {name: memory, nominalQuota: 4Ti}
      - {name: nvidia.com/gpu, nominalQuota: 32}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: default-priority}
value: 1
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: system-cluster-critical}
value: 2000000000
`

// Clients are the fake cluster's dynamic and discovery clients.
func (f Fake) Clients(t testing.TB) (*dynamicfake.FakeDynamicClient, *discoveryfake.FakeDiscovery) {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{}
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	for gv, rs := range Resources {
		list := &metav1.APIResourceList{GroupVersion: gv}
		for resource, kind := range rs {
			parsed, err := schema.ParseGroupVersion(gv)
			require.NoError(t, err)
			listKinds[parsed.WithResource(resource)] = kind + "List"
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: resource, Kind: kind})
		}
		if !slices.Contains(f.Without, gv) {
			disc.Resources = append(disc.Resources, list)
		}
	}
	// Kueue's newer version, which this cluster does not serve: a list of it
	// is answered 404 (below), as a real API server answers.
	for resource, kind := range Resources["kueue.x-k8s.io/v1beta1"] {
		listKinds[schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}] = kind + "List"
	}
	var objects []runtime.Object
	for _, doc := range strings.Split(BaseObjects+"\n---\n"+f.Objects, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		objects = append(objects, Object(t, doc))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objects...)
	dyn.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		review := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		require.NoError(t, unstructured.SetNestedField(review.Object, !f.Denied, "status", "allowed"))
		return true, review, nil
	})
	// A pod created in a dry run is admitted, and not stored.
	dyn.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		create := a.(clienttesting.CreateActionImpl)
		return len(create.GetCreateOptions().DryRun) > 0, create.GetObject(), nil
	})
	for _, resource := range []string{"appwrappers", "pytorchjobs", "jobsets", "trainjobs"} {
		dyn.PrependReactor("create", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
			obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
			if obj.GetLabels()[queueLabel] != "" && !f.Unmanaged {
				path := []string{"spec", "suspend"}
				if resource == "pytorchjobs" {
					path = []string{"spec", "runPolicy", "suspend"}
				}
				require.NoError(t, unstructured.SetNestedField(obj.Object, true, path...))
			}
			return true, obj, nil
		})
	}
	// An API the cluster does not serve answers 404 to everything.
	for _, gv := range f.Without {
		for resource := range Resources[gv] {
			dyn.PrependReactor("*", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), "")
			})
		}
	}
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if gvr := a.GetResource(); gvr.Group == "kueue.x-k8s.io" && gvr.Version == "v1beta2" {
			return true, nil, apierrors.NewNotFound(gvr.GroupResource(), "")
		}
		return false, nil, nil
	})
	if f.React != nil {
		f.React(dyn)
	}
	return dyn, disc
}

// Pods lists and watches the pods of a fake cluster's dynamic client, as
// the API server's core/v1 would (cluster.PodSource).
type Pods struct{ Dynamic dynamic.Interface }

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func (p Pods) Pods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	list, err := p.Dynamic.Resource(pods).Namespace(namespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: list.GetResourceVersion()}}
	for _, item := range list.Items {
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &pod); err != nil {
			return nil, err
		}
		out.Items = append(out.Items, pod)
	}
	return out, nil
}

// Watch watches the pods with the dynamic client: its events hold them
// unstructured.
func (p Pods) Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return p.Dynamic.Resource(pods).Namespace(namespace).Watch(ctx, opts)
}

// Objects lists the objects of a fake cluster's dynamic client, as the
// API server would answer a list (cluster.ObjectSource).
type Objects struct{ Dynamic dynamic.Interface }

func (o Objects) Each(ctx context.Context, resource schema.GroupVersionResource, namespace string, opts metav1.ListOptions, take func(*json.Decoder) error) error {
	list, err := o.Dynamic.Resource(resource).Namespace(namespace).List(ctx, opts)
	if err != nil {
		return err
	}
	for i := range list.Items {
		raw, err := list.Items[i].MarshalJSON()
		if err != nil {
			return err
		}
		if err := take(json.NewDecoder(bytes.NewReader(raw))); err != nil {
			return err
		}
	}
	return nil
}

// EachPending gets the queue's pendingworkloads with the dynamic client,
// whose reactors answer them all, and hands on those of the page asked, as
// Kueue's visibility API pages them.
func (o Objects) EachPending(ctx context.Context, resource schema.GroupVersionResource, namespace, queue string, offset, limit int64, take func(*json.Decoder) error) error {
	summary, err := o.Dynamic.Resource(resource).Namespace(namespace).Get(ctx, queue, metav1.GetOptions{}, "pendingworkloads")
	if err != nil {
		return err
	}
	items, _, err := unstructured.NestedSlice(summary.Object, "items")
	if err != nil {
		return err
	}
	for _, item := range items[min(offset, int64(len(items))):min(offset+limit, int64(len(items)))] {
		raw, err := json.Marshal(item)
		if err != nil {
			return err
		}
		if err := take(json.NewDecoder(bytes.NewReader(raw))); err != nil {
			return err
		}
	}
	return nil
}
