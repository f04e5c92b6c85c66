package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	discoveryfake "k8s.io/client-go/discovery/fake"
	restclient "k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
)

// Kueue's API is read in the newest version the cluster serves: v1beta1 is
// deprecated since Kueue v0.15, and the API server warns of it on every read.
func TestKueueInTheNewestVersionServed(t *testing.T) {
	for served, want := range map[string]string{"kueue.x-k8s.io/v1beta2": "v1beta2", "kueue.x-k8s.io/v1beta1": "v1beta1", "": "v1beta1"} {
		disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
		if served != "" {
			disc.Resources = []*metav1.APIResourceList{{GroupVersion: served}}
		}
		client := &Client{Discovery: disc}
		require.Equal(t, want, client.Kueue(context.Background(), "localqueues").Version, "served: %q", served)
	}
}

// The REST client of pods/log asks the API server's path with the query
// parameters of the options, reads the text as it is, and reads a refusal
// as the Status it is. A followed log is read through the client of its
// own (followingClient).
func TestLogClient(t *testing.T) {
	var asked []string
	serve := func(who string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked = append(asked, who+" "+r.URL.Path+"?"+r.URL.RawQuery)
			if strings.Contains(r.URL.Path, "forbidden") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"forbidden\" is forbidden: User \"researcher\" cannot get resource \"pods/log\"","reason":"Forbidden","code":403}`)
				return
			}
			fmt.Fprint(w, "line 1\nline 2\n")
		}))
	}
	server, followServer := serve("client"), serve("following")
	defer server.Close()
	defer followServer.Close()
	client, err := coreClient(&restclient.Config{Host: server.URL}, nil)
	require.NoError(t, err)
	following, err := followingClient(&restclient.Config{Host: followServer.URL})
	require.NoError(t, err)
	source := restLogs{client: client, following: following}
	tail, since := int64(10), int64(600)
	rc, err := source.Log(context.Background(), "ml", "demo-master-0", podwatch.LogOptions{Container: "pytorch", Follow: true, Timestamps: true, TailLines: &tail, SinceSeconds: &since})
	require.NoError(t, err)
	text, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, "line 1\nline 2\n", string(text))
	_, err = source.Log(context.Background(), "ml", "forbidden", podwatch.LogOptions{Container: "pytorch", Previous: true})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	require.Equal(t, []string{
		"following /api/v1/namespaces/ml/pods/demo-master-0/log?container=pytorch&follow=true&sinceSeconds=600&tailLines=10&timestamps=true",
		"client /api/v1/namespaces/ml/pods/forbidden/log?container=pytorch&previous=true",
	}, asked)
}

// The pods are listed in protobuf, which the API server speaks for its own
// types: the client asks for it, with the list's query, and reads it.
func TestPodClient(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	encoder := protobuf.NewSerializer(scheme, scheme)
	var accepted, asked string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepted, asked = r.Header.Get("Accept"), r.URL.Path+"?"+r.URL.RawQuery
		list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "42"},
			Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "demo-master-0"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		require.NoError(t, encoder.Encode(list, w))
	}))
	defer server.Close()
	client, err := coreClient(&restclient.Config{Host: server.URL, Timeout: time.Second}, nil)
	require.NoError(t, err)
	list, err := restPods{client: client}.Pods(context.Background(), "ml", metav1.ListOptions{LabelSelector: "a=b"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(accepted, runtime.ContentTypeProtobuf), accepted)
	require.Equal(t, "/api/v1/namespaces/ml/pods?labelSelector=a%3Db&timeout=1s", asked)
	require.Equal(t, "42", list.ResourceVersion)
	require.Len(t, list.Items, 1)
	require.Equal(t, corev1.PodRunning, list.Items[0].Status.Phase)
}

// The pods are watched in protobuf too: the client asks for it, and reads
// the stream's events as pods.
func TestPodWatch(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	var accepted, asked string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepted, asked = r.Header.Get("Accept"), r.URL.Path+"?"+r.URL.RawQuery
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		encoder := restwatch.NewEncoder(streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer),
			codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-master-0", ResourceVersion: "7"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}}
		require.NoError(t, encoder.Encode(&watch.Event{Type: watch.Modified, Object: pod}))
	}))
	defer server.Close()
	client, err := coreClient(&restclient.Config{Host: server.URL}, nil)
	require.NoError(t, err)
	w, err := restPods{watches: client}.Watch(context.Background(), "ml", metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "5"})
	require.NoError(t, err)
	defer w.Stop()
	event := <-w.ResultChan()
	require.Equal(t, watch.Modified, event.Type)
	pod, ok := event.Object.(*corev1.Pod)
	require.True(t, ok, "%T", event.Object)
	require.Equal(t, corev1.PodFailed, pod.Status.Phase)
	require.True(t, strings.HasPrefix(accepted, runtime.ContentTypeProtobuf), accepted)
	require.Equal(t, "/api/v1/namespaces/ml/pods?labelSelector=a%3Db&resourceVersion=5&watch=true", asked)
}

// A watch whose stream client-go could not read (HTTP/2's pings found its
// connection dead, say) is a cluster that cannot be reached, said by what
// came of the connection; any other error the API server gives is its
// answer.
func TestBrokenWatchIsUnreachable(t *testing.T) {
	client := &Client{Server: "https://10.0.0.1:6443"}
	reporter := apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")
	broken := apierrors.FromObject(reporter.AsObject(errors.New("unable to decode an event from the watch stream: http2: client connection lost")))
	var unreachable Unreachable
	require.ErrorAs(t, client.Unreached(broken), &unreachable)
	require.EqualError(t, cause(unreachable), "unable to decode an event from the watch stream: http2: client connection lost")
	require.NoError(t, client.Unreached(apierrors.NewInternalError(errors.New("etcd is slow"))))
}
