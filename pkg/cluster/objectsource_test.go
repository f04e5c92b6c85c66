package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	restclient "k8s.io/client-go/rest"
)

// A list is read as it comes, each item's JSON handed on in turn (read
// with whole numbers as int64, as the dynamic client reads them); the path is the
// resource's, in a namespace or in all; a refusal is the Status it is.
func TestObjectSource(t *testing.T) {
	var asked []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		if r.URL.Path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/workloads" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		fmt.Fprint(w, `{"kind":"AppWrapperList","apiVersion":"workload.codeflare.dev/v1beta2","metadata":{"resourceVersion":"9"},
"items":[{"metadata":{"name":"a","generation":3}},{"metadata":{"name":"b"},"spec":{"x":[1,2.5]}}]}`)
	}))
	defer server.Close()
	client, err := coreClient(&restclient.Config{Host: server.URL}, nil)
	require.NoError(t, err)
	source := restObjects{client: client}
	var got []*unstructured.Unstructured
	take := func(dec *json.Decoder) error {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		obj, err := objectOf(raw)
		got = append(got, obj)
		return err
	}
	require.NoError(t, source.Each(context.Background(), appWrappers, "ml", metav1.ListOptions{LabelSelector: "a=b"}, take))
	require.NoError(t, source.Each(context.Background(), pods, "", metav1.ListOptions{FieldSelector: "type=Warning"}, take))
	require.Len(t, got, 4)
	require.Equal(t, "b", got[1].GetName())
	require.Equal(t, int64(3), got[0].GetGeneration())
	require.Equal(t, []any{int64(1), 2.5}, got[1].Object["spec"].(map[string]any)["x"])
	err = source.Each(context.Background(), kueueResource("v1beta2", "workloads"), "ml", metav1.ListOptions{}, take)
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	require.Equal(t, []string{
		"/apis/workload.codeflare.dev/v1beta2/namespaces/ml/appwrappers?labelSelector=a%3Db",
		"/api/v1/pods?fieldSelector=type%3DWarning",
		"/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/workloads?",
	}, asked)
	// What is no list is an error, not nothing.
	require.Error(t, eachItem(strings.NewReader(`{"items": {"a": 1}}`), take))
	require.Error(t, eachItem(strings.NewReader(`[]`), take))
}

// A job's kind and metadata are read from its JSON, which is read no
// further: what follows them is not looked at.
func TestMetaOf(t *testing.T) {
	meta, err := metaOf(json.RawMessage(`{"apiVersion":"workload.codeflare.dev/v1beta2","kind":"AppWrapper","metadata":{"name":"a","annotations":{"x":"y"}},"spec":{not read`))
	require.NoError(t, err)
	require.Equal(t, "AppWrapper", meta.Kind)
	require.Equal(t, "a", meta.Name)
	require.Equal(t, map[string]string{"x": "y"}, meta.Annotations)
	_, err = metaOf(json.RawMessage(`{"kind":"AppWrapper","metadata":"a"}`))
	require.Error(t, err)
}
