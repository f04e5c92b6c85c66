package podwatch

import (
	"context"
	"errors"
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

// A mirror's watch asks the API server to end it after 5 to 10 minutes,
// as client-go's reflector does, with bookmarks. A watch that ends as soon
// as it is open without a change (client-go's empty watch, for a
// connection lost) and one that breaks (an error event, such as the
// client's when it could not read the stream) are told to again, then
// the objects are listed again; one whose version is gone (410) is
// listed again at once.
func TestMirrorWatchesEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	source := &fakePods{pods: []metav1.Object{pod("a", "1")}, version: "1", watches: make(chan *watch.FakeWatcher, 4)}
	lw := source.listWatch()
	var asked sync.Mutex
	var timeouts []int64
	watchOf := lw.Watch
	lw.Watch = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		require.True(t, opts.AllowWatchBookmarks)
		asked.Lock()
		timeouts = append(timeouts, *opts.TimeoutSeconds)
		asked.Unlock()
		return watchOf(ctx, opts)
	}
	told := make(chan error, 4)
	changes := make(chan Change, 16)
	m := NewMirror(lw, metav1.ListOptions{}, nil, changes, nil)
	require.NoError(t, m.Start(ctx, func(err error) bool { told <- err; return true }))
	listed := func() {
		t.Helper()
		for {
			select {
			case c := <-changes:
				if c.Obj == nil {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatal("not listed again")
			}
		}
	}
	listed()

	// Ended at once, without a change.
	(<-source.watches).Stop()
	require.ErrorIs(t, <-told, ErrShortWatch)
	listed()
	require.Equal(t, 2, source.lists)

	// Broken: the client could not read the stream.
	broken := apierrors.NewInternalError(errors.New("unable to decode an event from the watch stream: http2: client connection lost"))
	(<-source.watches).Error(&broken.ErrStatus)
	require.True(t, apierrors.IsInternalError(<-told))
	listed()
	require.Equal(t, 3, source.lists)

	// Its version gone: listed again, without a word to again.
	expired := apierrors.NewResourceExpired("too old resource version")
	(<-source.watches).Error(&expired.ErrStatus)
	listed()
	require.Equal(t, 4, source.lists)
	require.Empty(t, told)
	asked.Lock()
	defer asked.Unlock()
	for _, timeout := range timeouts {
		require.GreaterOrEqual(t, timeout, int64(300))
		require.Less(t, timeout, int64(600))
	}
}
