package cluster

import (
	"context"
	"encoding/base64"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConfigMap is the data of a ConfigMap (its binary data too): nil when the
// namespace has none of that name.
func (c *Client) ConfigMap(ctx context.Context, namespace, name string) (map[string]string, error) {
	obj, err := c.core(ctx, "configmaps", namespace, name)
	if obj == nil || err != nil {
		return nil, err
	}
	data := map[string]string{}
	text, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	for k, v := range text {
		data[k] = v
	}
	return data, base64Data(obj, "binaryData", data)
}

// Secret is the data of a Secret: nil when the namespace has none of that
// name.
func (c *Client) Secret(ctx context.Context, namespace, name string) (map[string]string, error) {
	obj, err := c.core(ctx, "secrets", namespace, name)
	if obj == nil || err != nil {
		return nil, err
	}
	data := map[string]string{}
	return data, base64Data(obj, "data", data)
}

// core reads an object of the core API: nil when there is none.
func (c *Client) core(ctx context.Context, resource, namespace, name string) (*unstructured.Unstructured, error) {
	obj, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: resource}).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if u := c.Unreached(err); u != nil {
		return nil, u
	}
	kind := resource[:len(resource)-1]
	if apierrors.IsForbidden(err) {
		return nil, Forbidden{Verb: "get", Resource: resource, Namespace: namespace, What: fmt.Sprintf("to read the %s %s", kind, name), Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s %s/%s: %w", kind, namespace, name, err)
	}
	return obj, nil
}

// base64Data puts an object's base64 field in data.
func base64Data(obj *unstructured.Unstructured, field string, data map[string]string) error {
	encoded, _, _ := unstructured.NestedStringMap(obj.Object, field)
	for k, v := range encoded {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return fmt.Errorf("%s %s/%s, %s.%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), field, k, err)
		}
		data[k] = string(b)
	}
	return nil
}
