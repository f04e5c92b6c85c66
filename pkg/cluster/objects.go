package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
)

// ObjectSource lists the objects of a resource one at a time, as the
// answer comes: the API server's answer read as a stream (restObjects),
// or a fake in tests. A list of thousands of jobs, or of their Workloads,
// is tens of MiB of JSON; read whole, then decoded, it would take as many
// hundreds of MiB; and it is asked whole, not in pages, which the API
// server answers from its cache rather than from etcd.
//
// Each hands take each object as the next value of a JSON decoder, which
// take reads, once: into what it needs (a Workload's few fields, decoded
// as they stream in), or as it is (json.RawMessage), to keep until it can
// use it (a job).
//
// EachPending does the same with the Workloads pending in a LocalQueue, as
// Kueue's visibility API lists them (a GET of the queue's pendingworkloads,
// resource its localqueues): at most limit, from the offset-th. The API
// answers in pages (of 1,000 unless asked), and the dynamic client cannot
// ask for one but the first.
type ObjectSource interface {
	Each(ctx context.Context, resource schema.GroupVersionResource, namespace string, opts metav1.ListOptions, take func(*json.Decoder) error) error
	EachPending(ctx context.Context, resource schema.GroupVersionResource, namespace, queue string, offset, limit int64, take func(*json.Decoder) error) error
}

// objectOf reads an object's JSON as the dynamic client reads it: whole
// numbers as int64.
func objectOf(raw json.RawMessage) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	return obj, utiljson.Unmarshal(raw, &obj.Object)
}

// metaOf reads an object's kind and metadata from its JSON, and no
// further than its metadata: the API server writes an object's fields in
// the order of their names, its metadata before its spec and status.
func metaOf(raw json.RawMessage) (*metav1.PartialObjectMetadata, error) {
	meta := &metav1.PartialObjectMetadata{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := delim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var into any = &json.RawMessage{}
		switch key {
		case "apiVersion":
			into = &meta.APIVersion
		case "kind":
			into = &meta.Kind
		case "metadata":
			return meta, dec.Decode(&meta.ObjectMeta)
		}
		if err := dec.Decode(into); err != nil {
			return nil, err
		}
	}
	return meta, nil
}

// restObjects lists with a REST client without a timeout (the answer of
// a large list takes as long as it takes to read; a connection that dies
// meanwhile is closed by HTTP/2's pings).
type restObjects struct{ client restclient.Interface }

func (r restObjects) Each(ctx context.Context, resource schema.GroupVersionResource, namespace string, opts metav1.ListOptions, take func(*json.Decoder) error) error {
	req := r.get(resource, namespace, resource.Resource)
	if opts.LabelSelector != "" {
		req.Param("labelSelector", opts.LabelSelector)
	}
	if opts.FieldSelector != "" {
		req.Param("fieldSelector", opts.FieldSelector)
	}
	return eachOf(ctx, req, take)
}

func (r restObjects) EachPending(ctx context.Context, resource schema.GroupVersionResource, namespace, queue string, offset, limit int64, take func(*json.Decoder) error) error {
	req := r.get(resource, namespace, resource.Resource, queue, "pendingworkloads").
		Param("offset", strconv.FormatInt(offset, 10)).Param("limit", strconv.FormatInt(limit, 10))
	return eachOf(ctx, req, take)
}

// get is a GET of a path under a resource's API, in a namespace ("": none).
func (r restObjects) get(resource schema.GroupVersionResource, namespace string, under ...string) *restclient.Request {
	root := "/apis/" + resource.Group
	if resource.Group == "" {
		root = "/api"
	}
	at := []string{root, resource.Version}
	if namespace != "" {
		at = append(at, "namespaces", namespace)
	}
	return r.client.Get().AbsPath(path.Join(append(at, under...)...)).SetHeader("Accept", "application/json")
}

// eachOf reads the answer of a request as a list (eachItem).
func eachOf(ctx context.Context, req *restclient.Request, take func(*json.Decoder) error) error {
	body, err := req.Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	return eachItem(body, take)
}

// eachItem reads a list's JSON, handing each of its items to take (to
// decode from dec) as it comes.
func eachItem(r io.Reader, take func(*json.Decoder) error) error {
	dec := json.NewDecoder(r)
	if err := delim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		if key != "items" {
			var skipped json.RawMessage
			if err := dec.Decode(&skipped); err != nil {
				return err
			}
			continue
		}
		if err := delim(dec, '['); err != nil {
			return err
		}
		for dec.More() {
			if err := take(dec); err != nil {
				return err
			}
		}
		if err := delim(dec, ']'); err != nil {
			return err
		}
	}
	return nil
}

// delim reads the next token of a list's JSON, which must be d.
func delim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("reading a list: %v where %v was expected", t, d)
	}
	return nil
}

// objects lists and watches a resource with the dynamic clients.
func (c *Client) objects(resource schema.GroupVersionResource, namespace string) podwatch.ListWatch {
	client := c.Dynamic.Resource(resource).Namespace(namespace)
	return podwatch.ListWatch{
		List: func(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, string, error) {
			list, err := client.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			out := make([]metav1.Object, len(list.Items))
			for i := range list.Items {
				out[i] = &list.Items[i]
			}
			return out, list.GetResourceVersion(), nil
		},
		Watch: c.Watches.Resource(resource).Namespace(namespace).Watch,
	}
}

// podObjects lists and watches pods with the PodSource, as *corev1.Pod,
// each compact.
func (c *Client) podObjects(namespace string) podwatch.ListWatch {
	var lw podwatch.ListWatch
	lw.Watch = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return c.PodSource.Watch(ctx, namespace, opts)
	}
	lw.List = func(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, string, error) {
		list, err := c.listPods(ctx, namespace, opts)
		if err != nil {
			return nil, "", err
		}
		out := make([]metav1.Object, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, list.ResourceVersion, nil
	}
	lw.Typed = func(obj *unstructured.Unstructured) (metav1.Object, error) {
		pod := &corev1.Pod{}
		return pod, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pod)
	}
	lw.Trim = func(obj metav1.Object) {
		if pod, ok := obj.(*corev1.Pod); ok {
			compact(pod)
		}
	}
	return lw
}
