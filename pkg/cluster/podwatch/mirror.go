// Package podwatch is what the generator reads of a job's pods, and how: a
// mirror of the objects a list and a watch select (the pods of a job, the
// Warning events of its namespace), kept up through the watch's ends and
// the cluster's outages; and the logs of their containers, read each
// whole in turn, or followed across restarts and outages without a line
// lost or said twice. What to read, and when (which pods, which
// containers, what a follower notices of them), is the cluster package's:
// it knows the kinds of job; this package knows the API server.
package podwatch

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// ListWatch lists and watches objects of one resource in one namespace;
// Typed, when not nil, reads the objects of a watch's events that come
// unstructured as List gives them (a fake pod source's); Trim, when not
// nil, drops what no reader reads of the object of each event before it
// is held (List gives them trimmed).
type ListWatch struct {
	List  func(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, string, error)
	Watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Typed func(*unstructured.Unstructured) (metav1.Object, error)
	Trim  func(metav1.Object)
}

// Mirror keeps the objects that a list and a watch select in a namespace
// as the cluster has them (by name), and hands each change on: it lists
// them, then watches them from that list, opening the watch again from the
// last version seen when it ends (the client's request timeout, the API
// server's own), and listing them again when that version is gone. A
// follower reads a job's pods from it instead of listing them every few
// seconds, and notices its failures in its changes.
type Mirror struct {
	lw   ListWatch
	opts metav1.ListOptions
	// keep selects the objects kept; the others are taken for deleted.
	keep func(metav1.Object) bool
	// changes, when not nil, receives each object listed, changed or
	// deleted, in order; handed, when not nil, counts the changes handed
	// on and not yet taken in (the receiver counts them down).
	changes chan Change
	handed  *atomic.Int64
	// asks are the readers' questions to the goroutine that keeps it (see
	// Now).
	asks chan chan []metav1.Object

	mu      sync.Mutex
	objects map[string]metav1.Object
	synced  bool
}

// NewMirror is a mirror of the objects that lw lists and watches with
// opts, those keep keeps (nil: all). changes, when not nil, receives each
// object listed, changed or deleted, in order; handed, when not nil,
// counts the changes handed on and not yet taken in (the receiver counts
// them down).
func NewMirror(lw ListWatch, opts metav1.ListOptions, keep func(metav1.Object) bool, changes chan Change, handed *atomic.Int64) *Mirror {
	return &Mirror{lw: lw, opts: opts, keep: keep, changes: changes, handed: handed, asks: make(chan chan []metav1.Object)}
}

// Change is an object of a mirror listed or changed, or deleted; one
// without an object says that the objects were all listed.
type Change struct {
	Deleted bool
	Obj     metav1.Object
}

// maxMirrorRetry is the longest a mirror waits before it lists again what
// it could not.
const maxMirrorRetry = 5 * time.Second

// errRelist is a watch whose version is gone: the objects are listed again.
var errRelist = errors.New("the watch's version is gone")

// started is a mirror's objects listed and their watch open; gone, once
// held, the objects held before that the list no longer has.
type started struct {
	items   []metav1.Object
	version string
	watch   watch.Interface
	gone    map[string]metav1.Object
}

// begin lists the objects and opens their watch from that list.
func (m *Mirror) begin(ctx context.Context) (*started, error) {
	items, version, err := m.lw.List(ctx, m.opts)
	if err != nil {
		return nil, err
	}
	w, err := m.open(ctx, version)
	if err != nil {
		return nil, err
	}
	return &started{items: items, version: version, watch: w}, nil
}

// watchTimeout is the least time the API server is asked to keep a watch
// open; each watch asks for up to twice as long, at random, as client-go's
// reflector does, so that the watches of many followers do not all end,
// and open again, at once. The API server otherwise ends a watch when it
// likes (between its --min-request-timeout and twice it), and the client
// has no timeout of its own for a watch (see cluster's Client.Watches).
const watchTimeout = 5 * time.Minute

// open opens the watch from a version; errRelist when it is gone.
func (m *Mirror) open(ctx context.Context, version string) (watch.Interface, error) {
	opts := m.opts
	opts.ResourceVersion, opts.AllowWatchBookmarks = version, true
	timeout := int64(watchTimeout.Seconds() * (1 + rand.Float64()))
	opts.TimeoutSeconds = &timeout
	w, err := m.lw.Watch(ctx, opts)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return nil, errRelist
	}
	return w, err
}

// start lists the objects and opens their watch, then keeps the mirror in
// the background (run): what was listed is held once start has returned,
// and whatever changes after is seen. The error is the list's or the
// watch's.
func (m *Mirror) Start(ctx context.Context, again func(error) bool) error {
	s, err := m.begin(ctx)
	if err != nil {
		return err
	}
	s.gone = m.hold(s.items)
	go m.run(ctx, again, s)
	return nil
}

// hold holds the objects listed, and gives those held before that are gone.
func (m *Mirror) hold(items []metav1.Object) map[string]metav1.Object {
	listed := map[string]metav1.Object{}
	for _, obj := range items {
		if m.keep == nil || m.keep(obj) {
			listed[obj.GetName()] = obj
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gone := m.objects
	for name := range listed {
		delete(gone, name)
	}
	m.objects, m.synced = listed, true
	return gone
}

// byName is the object held of a name, if any.
func (m *Mirror) ByName(name string) (metav1.Object, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	obj, ok := m.objects[name]
	return obj, ok
}

// Run keeps the mirror until ctx ends (its error), or until an error that
// again does not retry (that error), as run does from the start.
func (m *Mirror) Run(ctx context.Context, again func(error) bool) error {
	return m.run(ctx, again, nil)
}

// run keeps the mirror, from what Start began (nil: it begins), until ctx
// ends (its error), or until an error that again does not retry (that
// error); it retries the others after a second, and longer as they go on,
// up to maxMirrorRetry: a follower back from an outage sees the pods as
// they are within seconds, before their controller deletes those that
// failed meanwhile.
func (m *Mirror) run(ctx context.Context, again func(error) bool, s *started) error {
	delay := time.Second
	for {
		var err error
		if s == nil {
			if s, err = m.begin(ctx); err == nil {
				s.gone = m.hold(s.items)
			}
		}
		if err == nil {
			err = m.keepUp(ctx, s)
			s = nil
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errRelist):
			continue
		case !again(err):
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, maxMirrorRetry)
	}
}

// keepUp hands on the objects listed and held (and each gone since the
// last list), then takes in the watch's events, opening it again when it
// ends, until an error.
func (m *Mirror) keepUp(ctx context.Context, s *started) error {
	for _, obj := range s.gone {
		if !m.hand(ctx, Change{Deleted: true, Obj: obj}) {
			s.watch.Stop()
			return ctx.Err()
		}
	}
	for _, obj := range s.items {
		if (m.keep == nil || m.keep(obj)) && !m.hand(ctx, Change{Obj: obj}) {
			s.watch.Stop()
			return ctx.Err()
		}
	}
	if !m.hand(ctx, Change{}) {
		s.watch.Stop()
		return ctx.Err()
	}
	w, version := s.watch, s.version
	for {
		var err error
		if version, err = m.follow(ctx, w, version); err != nil {
			return err
		}
		if w, err = m.open(ctx, version); err != nil {
			return err
		}
	}
}

// ErrShortWatch is a watch that ended as soon as it was open, without a
// change: client-go opens an empty watch for a request that met a lost
// connection or a timeout, so that its caller tries again; a mirror tries
// again as after any error, listing first, whose answer says whether the
// cluster answers.
var ErrShortWatch = errors.New("the watch ended as soon as it was open")

// shortWatch is how soon a watch that ends without a change is taken for
// ErrShortWatch, as client-go's reflector takes it.
const shortWatch = time.Second

// follow takes in a watch's events until it ends, answering the readers'
// questions meanwhile, and gives the version seen last; the error is
// errRelist when that version is gone, the API server's when the watch
// broke, ErrShortWatch when it ended at once, ctx's when it ended first.
func (m *Mirror) follow(ctx context.Context, w watch.Interface, version string) (string, error) {
	defer w.Stop()
	opened, from := time.Now(), version
	for {
		select {
		case <-ctx.Done():
			return version, ctx.Err()
		case event, ok := <-w.ResultChan():
			if err := m.take(ctx, event, ok, &version); err != nil {
				return version, err
			}
			if !ok && version == from && time.Since(opened) < shortWatch {
				return version, ErrShortWatch
			}
			if !ok {
				return version, nil
			}
		case reply := <-m.asks:
			// Every change the watch has delivered is taken in first.
			for delivered := true; delivered; {
				select {
				case event, ok := <-w.ResultChan():
					if err := m.take(ctx, event, ok, &version); err != nil || !ok {
						reply <- m.snapshot()
						return version, err
					}
				default:
					delivered = false
				}
			}
			reply <- m.snapshot()
		}
	}
}

// take takes in an event of the watch (ok false when it ended), and keeps
// its version.
func (m *Mirror) take(ctx context.Context, event watch.Event, ok bool, version *string) error {
	if !ok {
		return nil
	}
	if event.Type == watch.Error {
		// The version is gone (410), or the watch broke: the API server
		// said why, or the client could not read its stream (a
		// connection lost), which again is asked about.
		err := apierrors.FromObject(event.Object)
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return errRelist
		}
		return err
	}
	obj, isObject := event.Object.(metav1.Object)
	if !isObject {
		return nil
	}
	*version = obj.GetResourceVersion()
	if event.Type == watch.Bookmark {
		return nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && m.lw.Typed != nil {
		var err error
		if obj, err = m.lw.Typed(u); err != nil {
			return nil // not one of them
		}
	}
	if m.lw.Trim != nil {
		m.lw.Trim(obj)
	}
	c := Change{Obj: obj, Deleted: event.Type == watch.Deleted || m.keep != nil && !m.keep(obj)}
	m.mu.Lock()
	if c.Deleted {
		delete(m.objects, obj.GetName())
	} else {
		m.objects[obj.GetName()] = obj
	}
	m.mu.Unlock()
	if !m.hand(ctx, c) {
		return ctx.Err()
	}
	return nil
}

// hand hands a change on; false when ctx ended first.
func (m *Mirror) hand(ctx context.Context, c Change) bool {
	if m.changes == nil {
		return true
	}
	if m.handed != nil {
		m.handed.Add(1)
	}
	select {
	case m.changes <- c:
		return true
	case <-ctx.Done():
		if m.handed != nil {
			m.handed.Add(-1)
		}
		return false
	}
}

// askWait is how long a reader waits for the goroutine that keeps a mirror
// to answer, before it takes what the mirror holds as it is: the
// goroutine is listing again, or opening the watch again.
const askWait = time.Second

// now are the objects the mirror holds once it has taken in every change
// its watch has delivered, by name; false before it has listed them.
func (m *Mirror) Now(ctx context.Context) ([]metav1.Object, bool) {
	reply := make(chan []metav1.Object, 1)
	select {
	case m.asks <- reply:
		select {
		case objects := <-reply:
			return objects, true
		case <-ctx.Done():
		}
	case <-ctx.Done():
	case <-time.After(askWait):
	}
	return m.kept()
}

// kept are the objects the mirror holds, by name, and whether it has
// listed them yet.
func (m *Mirror) kept() ([]metav1.Object, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sorted(), m.synced
}

// snapshot is kept's objects, for the goroutine that keeps the mirror.
func (m *Mirror) snapshot() []metav1.Object {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sorted()
}

func (m *Mirror) sorted() []metav1.Object {
	out := slices.Collect(maps.Values(m.objects))
	slices.SortFunc(out, func(a, b metav1.Object) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// drain waits until none is left of the objects that opts select and that
// stillThere keeps. It gives the objects left when it stops early, and
// why: ctx's error, or the cluster's.
func (lw ListWatch) Drain(ctx context.Context, opts metav1.ListOptions, stillThere func(metav1.Object) bool) ([]metav1.Object, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := &Mirror{lw: lw, opts: opts, keep: stillThere, changes: make(chan Change)}
	ended := make(chan error, 1)
	go func() { ended <- m.run(ctx, func(err error) bool { return errors.Is(err, ErrShortWatch) }, nil) }()
	for {
		if left, synced := m.kept(); synced && len(left) == 0 {
			return nil, nil
		}
		select {
		case <-m.changes:
		case err := <-ended:
			left, _ := m.kept()
			return left, err
		}
	}
}

// podsIn are the pods among a mirror's objects.
func PodsIn(objects []metav1.Object) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(objects))
	for _, obj := range objects {
		if pod, ok := obj.(*corev1.Pod); ok {
			out = append(out, *pod)
		}
	}
	return out
}
