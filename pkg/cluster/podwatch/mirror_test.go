package podwatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// fakePods lists the pods it holds, at a version, and opens watches a test
// drives; a watch from a version it no longer has is refused as Gone.
type fakePods struct {
	mu      sync.Mutex
	pods    []metav1.Object
	version string
	lists   int
	watches chan *watch.FakeWatcher
	gone    bool
}

func (f *fakePods) listWatch() ListWatch {
	return ListWatch{
		List: func(context.Context, metav1.ListOptions) ([]metav1.Object, string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.lists++
			return append([]metav1.Object{}, f.pods...), f.version, nil
		},
		Watch: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			f.mu.Lock()
			gone := f.gone && opts.ResourceVersion != f.version
			f.mu.Unlock()
			if gone {
				return nil, apierrors.NewGone("too old resource version")
			}
			w := watch.NewFake()
			f.watches <- w
			return w, nil
		},
	}
}

func pod(name, version string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version}}
}

// A mirror hands on what it lists, then each change its watch tells; when
// the watch ends, it opens it again from the last version seen, and when
// that version is gone, it lists again, handing on as deleted what the
// list no longer has.
func TestMirror(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	source := &fakePods{pods: []metav1.Object{pod("a", "1"), pod("b", "1")}, version: "1", watches: make(chan *watch.FakeWatcher, 4)}
	changes := make(chan Change, 16)
	m := NewMirror(source.listWatch(), metav1.ListOptions{}, nil, changes, nil)
	require.NoError(t, m.Start(ctx, func(error) bool { return true }))
	next := func() string {
		select {
		case c := <-changes:
			switch {
			case c.Obj == nil:
				return "listed"
			case c.Deleted:
				return "-" + c.Obj.GetName()
			}
			return "+" + c.Obj.GetName()
		case <-time.After(10 * time.Second):
			t.Fatal("no change")
			return ""
		}
	}
	got := []string{next(), next(), next()}
	require.ElementsMatch(t, []string{"+a", "+b", "listed"}, got)
	require.Equal(t, "listed", got[2])

	w := <-source.watches
	w.Add(pod("c", "2"))
	require.Equal(t, "+c", next())
	objects, synced := m.Now(ctx)
	require.True(t, synced)
	require.Len(t, objects, 3)

	// The watch ends; version 2 is gone by then: listed again.
	source.mu.Lock()
	source.pods, source.version, source.gone = []metav1.Object{pod("a", "3")}, "3", true
	source.mu.Unlock()
	w.Stop()
	got = []string{next(), next(), next(), next()}
	require.ElementsMatch(t, []string{"-b", "-c", "+a", "listed"}, got)
	require.Equal(t, 2, source.lists)
	_, held := m.ByName("c")
	require.False(t, held)
}

// Drain waits until none is left of what it lists; an error it may not
// retry ends it with what is left.
func TestDrain(t *testing.T) {
	source := &fakePods{pods: []metav1.Object{pod("a", "1")}, version: "1", watches: make(chan *watch.FakeWatcher, 4)}
	go func() {
		w := <-source.watches
		w.Delete(pod("a", "2"))
	}()
	left, err := source.listWatch().Drain(context.Background(), metav1.ListOptions{}, nil)
	require.NoError(t, err)
	require.Empty(t, left)

	forbidden := ListWatch{
		List: func(context.Context, metav1.ListOptions) ([]metav1.Object, string, error) {
			return nil, "", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
		},
	}
	_, err = forbidden.Drain(context.Background(), metav1.ListOptions{}, nil)
	require.True(t, apierrors.IsForbidden(err), err)
}
