package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
)

// sight is what a follower (Follow, Logs with Follow) watches of a job on
// one cluster: the job itself, by its name, and its Kueue Workload, by
// Kueue's label of the job's uid; on a MultiKueue worker, the job's copy
// and the copy's Workload. Each is a mirror (a list, then a watch from
// it), so that a follower asks nothing while nothing changes, and each
// change wakes it. Its pods and their events are the watch of their
// failures' (watchFailures).
type sight struct {
	on   *Client
	ref  Ref
	wake func()
	job  *podwatch.Mirror

	mu sync.Mutex
	// err is why the job could not be listed or watched last (nil once it
	// was listed again): Unreachable while the cluster does not answer.
	err error
	// workload mirrors the Workloads of the job of uid (Kueue makes one),
	// until unwatch: a job of the same name made again (a worker's copy
	// of a job dispatched again) has a Workload of its own. wlErr is why
	// they could not be listed, kept when it will not change (not
	// allowed, Kueue not installed).
	workload *podwatch.Mirror
	uid      types.UID
	unwatch  context.CancelFunc
	wlErr    error
}

// sight watches the job ref on this cluster until ctx ends, and calls
// wake at each change of the job or its Workload, and each time the
// cluster stops answering or answers again. The job Find found is watched
// from the version it read, not listed again.
func (c *Client) sight(ctx context.Context, ref Ref, wake func()) *sight {
	s := &sight{on: c, ref: ref, wake: wake}
	lw := c.objects(ref.resource(), ref.Namespace)
	if found := c.take(ref); found != nil {
		list := lw.List
		lw.List = func(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, string, error) {
			if obj := found; obj != nil {
				found = nil
				return []metav1.Object{obj}, obj.GetResourceVersion(), nil
			}
			return list(ctx, opts)
		}
	}
	changes := make(chan podwatch.Change)
	s.job = podwatch.NewMirror(lw, metav1.ListOptions{FieldSelector: "metadata.name=" + ref.Name},
		func(obj metav1.Object) bool { return obj.GetName() == ref.Name }, changes, nil)
	go s.job.Run(ctx, s.again)
	go func() {
		// The job is read once it is listed: the cluster answers.
		listed := false
		for {
			select {
			case c := <-changes:
				switch {
				case c.Obj == nil:
					listed = true
					s.outcome(nil)
				case listed:
					wake()
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return s
}

// again takes in why the job's list or watch ended: the mirror tries
// again when the cluster may answer later.
func (s *sight) again(err error) bool {
	switch {
	case errors.Is(err, podwatch.ErrShortWatch):
		// No answer either way: the list that follows says.
		return true
	case s.on.Unreached(err) != nil:
		s.outcome(s.on.Unreached(err))
		return true
	case transient(err):
		return true
	case apierrors.IsForbidden(err):
		s.outcome(forbidden("watch", s.ref.resource().GroupResource().String(), s.ref.Namespace, "to follow the job"))
	default:
		s.outcome(fmt.Errorf("watching the %s: %w", s.ref, err))
	}
	return false
}

// transient tells the API server's answers that say to ask again later.
func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err)
}

// outcome keeps how the job's last list or watch ended, and wakes the
// follower.
func (s *sight) outcome(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.wake()
}

// object is the job as the cluster has it now: NotFound when it is gone;
// the error of its watch while the cluster does not answer.
func (s *sight) object(ctx context.Context) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	objects, _ := s.job.Now(ctx)
	if len(objects) == 0 {
		return nil, NotFound{Ref: s.ref}
	}
	return objects[0].(*unstructured.Unstructured), nil
}

// workloadOf is the Workload of the job obj, as Kueue has it now (nil for
// none), from a mirror of those Kueue labels with its uid, listed at the
// first reading of the job; the error says why they could not be listed.
func (s *sight) workloadOf(ctx context.Context, obj *unstructured.Unstructured) (*workload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid := obj.GetUID()
	if s.workload != nil && s.uid != uid {
		s.unwatch()
		s.workload = nil
	}
	if s.workload == nil && s.wlErr == nil {
		changes := make(chan podwatch.Change)
		watching, unwatch := context.WithCancel(ctx)
		m, err := s.on.watchKueue(watching, "workloads", obj.GetNamespace(), metav1.ListOptions{LabelSelector: jobUIDLabel + "=" + string(uid)},
			func(wl metav1.Object) bool { return ownedBy(wl, uid) }, changes)
		if err != nil {
			unwatch()
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
				s.wlErr = err
			}
			return nil, err
		}
		s.workload, s.uid, s.unwatch = m, uid, unwatch
		go func() {
			// What it listed first is this reading's: its changes after
			// are news.
			listed := false
			for {
				select {
				case c := <-changes:
					if listed {
						s.wake()
					}
					listed = listed || c.Obj == nil
				case <-watching.Done():
					return
				}
			}
		}()
	}
	if s.workload == nil {
		return nil, s.wlErr
	}
	objects, _ := s.workload.Now(ctx)
	if len(objects) == 0 {
		return nil, nil
	}
	var wl workload
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objects[len(objects)-1].(*unstructured.Unstructured).Object, &wl); err != nil {
		return nil, fmt.Errorf("reading a Workload: %w", err)
	}
	return &wl, nil
}

// watchKueue starts a mirror of a resource of Kueue's API in a namespace
// (see podwatch.Mirror.Start), in the version the cluster serves, which
// retries when the cluster may answer later.
func (c *Client) watchKueue(ctx context.Context, resource, namespace string, opts metav1.ListOptions, keep func(metav1.Object) bool, changes chan podwatch.Change) (*podwatch.Mirror, error) {
	var m *podwatch.Mirror
	err := c.inKueue(resource, func(gvr schema.GroupVersionResource) error {
		m = podwatch.NewMirror(c.objects(gvr, namespace), opts, keep, changes, nil)
		return m.Start(ctx, func(err error) bool { return c.Unreached(err) != nil || transient(err) })
	})
	return m, err
}

// ownedBy tells whether an object is owned by the object of that uid.
func ownedBy(obj metav1.Object, uid types.UID) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}
