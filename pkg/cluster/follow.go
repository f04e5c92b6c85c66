package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// followMisses is how many readings in a row Follow lets the cluster miss
// before it gives up: a long job outlives short outages.
const followMisses = 5

// Follow reads the job's status until it has finished (Succeeded or Failed)
// or ctx ends, and reports each reading. It gives the last status; the
// error is ctx's when ctx ended first. It remembers a failed pod seen along
// the way: after a failure the AppWrapper controller may delete the pods,
// and their exit codes with them.
func (c *Client) Follow(ctx context.Context, ref Ref, report func(Status)) (Status, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last Status
	failed := &firstFailure{}
	if selector := kindNamed(ref.Kind).selector(ref.Name); selector != "" {
		go c.watchFailures(ctx, ref.Namespace, selector, failed)
	}
	misses := 0
	for {
		s, err := c.reading(ctx, ref)
		var unreachable Unreachable
		switch {
		case ctx.Err() != nil:
			return last, ctx.Err()
		case errors.As(err, &NotFound{}):
			return last, fmt.Errorf("the %s was deleted while it was followed", ref)
		case errors.As(err, &unreachable) && misses < followMisses:
			misses++
		case err != nil:
			return last, err
		default:
			misses = 0
			if s.FailedPod != nil {
				failed.set(s.FailedPod)
			}
			if s.State == Failed {
				s.FailedPod = failed.get()
			}
			last = s
			report(s)
			if s.State.Finished() {
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(c.every()):
		}
	}
}

// firstFailure is the first failed pod seen while following a job: the
// likeliest cause of its failure.
type firstFailure struct {
	mu  sync.Mutex
	pod *FailedPod
}

func (f *firstFailure) set(pod *FailedPod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pod == nil {
		f.pod = pod
	}
}

func (f *firstFailure) get() *FailedPod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pod
}

// watchFailures watches the job's pods until ctx ends, for a failed one:
// readings every few seconds can miss it, as the AppWrapper controller
// deletes the pods of a failed job within a second or so. Without a watch
// (not allowed, say) the readings are all there is.
func (c *Client) watchFailures(ctx context.Context, namespace, selector string, failed *firstFailure) {
	w, err := c.Dynamic.Resource(pods).Namespace(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case event, ok := <-w.ResultChan():
			if !ok {
				return
			}
			obj, isObject := event.Object.(*unstructured.Unstructured)
			var pod corev1.Pod
			if !isObject || runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pod) != nil {
				continue
			}
			if f := failure(pod); f != nil {
				failed.set(f)
			}
		}
	}
}
