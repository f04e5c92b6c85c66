package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deletionPolls bounds the wait for a deleted job to be gone: its
// controller deletes what it made first, and may be down.
const deletionPolls = 150

// Deletion is what Delete did.
type Deletion struct {
	Ref Ref
	// State is the job's state when it was deleted.
	State State
	// Pods is how many pods it had then.
	Pods int
	// Waited is true when Delete waited until the job and its pods were
	// gone.
	Waited bool
}

// String says what Delete did.
func (d Deletion) String() string {
	pods := map[int]string{0: "no pods", 1: "1 pod"}[d.Pods]
	if pods == "" {
		pods = fmt.Sprintf("%d pods", d.Pods)
	}
	if !d.Waited {
		return fmt.Sprintf("deleting %s (it was %s, with %s) in the foreground, what it made first; not waiting until it is gone (--wait=false)", d.Ref, d.State, pods)
	}
	return fmt.Sprintf("deleted %s (it was %s, with %s), and what it made", d.Ref, d.State, pods)
}

// Delete deletes a job and what it made, in the foreground (what it made
// goes first); with wait, it waits until the job and its pods are gone.
// The error is NotFound when there is no such job.
func (c *Client) Delete(ctx context.Context, ref Ref, wait bool) (Deletion, error) {
	obj, err := c.get(ctx, ref)
	if err != nil {
		return Deletion{}, err
	}
	s, podList, _, err := c.read(ctx, obj)
	if err != nil {
		return Deletion{}, err
	}
	done := Deletion{Ref: ref, State: s.State, Pods: len(podList)}
	if err := c.remove(ctx, obj); err != nil {
		return done, err
	}
	if !wait {
		return done, nil
	}
	done.Waited = true
	return done, c.gone(ctx, obj, s.holder)
}

// remove deletes a job in the foreground, unless it is being deleted
// already; the UID precondition keeps a job of the same name made since
// from being deleted. What was kept of why jobs of its name failed goes
// with it, and the ConfigMaps of its workspace, once it is deleted.
func (c *Client) remove(ctx context.Context, old *unstructured.Unstructured) error {
	if old.GetDeletionTimestamp() != nil {
		return errors.Join(c.deleteWorkspace(ctx, old), c.forget(old))
	}
	k := kindOf(old)
	foreground, uid := metav1.DeletePropagationForeground, old.GetUID()
	err := c.Dynamic.Resource(k.resource).Namespace(old.GetNamespace()).Delete(ctx, old.GetName(),
		metav1.DeleteOptions{PropagationPolicy: &foreground, Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return errors.Join(c.deleteWorkspace(ctx, old), c.forget(old))
	case apierrors.IsForbidden(err) && !IsWebhookDenial(err):
		return forbidden("delete", k.resource.GroupResource().String(), old.GetNamespace(), "to delete the job")
	}
	return c.failed(err, fmt.Sprintf("deleting the %s %q in namespace %q", old.GetKind(), old.GetName(), old.GetNamespace()))
}

// forget removes what was kept of why jobs of a deleted job's name failed.
func (c *Client) forget(obj *unstructured.Unstructured) error {
	if c.Keeper == nil {
		return nil
	}
	return c.Keeper.Forget(storyOf(c, obj))
}

// gone waits until a deleted job is gone, and with pods (the cluster that
// holds them), its pods too: on a MultiKueue worker, its copy and the
// copy's pods, which MultiKueue deletes after the job.
func (c *Client) gone(ctx context.Context, old *unstructured.Unstructured, pods *Client) error {
	ref := Ref{Kind: old.GetKind(), Namespace: old.GetNamespace(), Name: old.GetName()}
	resource := c.Dynamic.Resource(kindOf(old).resource).Namespace(ref.Namespace)
	last, left, copyLeft := old, 0, false
	for range deletionPolls {
		obj, err := resource.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if pods == nil {
				return nil
			}
			if pods != c {
				copied, err := pods.Dynamic.Resource(kindOf(old).resource).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				if copyLeft = err == nil && copied != nil; copyLeft {
					break
				}
			}
			// Pods the user may not list are not waited for.
			podList, err := pods.podsOf(ctx, old)
			if left = len(podList); err != nil || left == 0 {
				return nil
			}
		case err != nil:
			return c.failed(err, "waiting for the "+ref.String()+" to be deleted")
		case obj.GetUID() != old.GetUID():
			return fmt.Errorf("another %s was created while the old one was deleted; see what it is (generator status %s -n %s)", ref, ref.Name, ref.Namespace)
		default:
			last = obj
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.every()):
		}
	}
	waiting := ""
	switch finalizers := last.GetFinalizers(); {
	case copyLeft:
		waiting = " (its copy on its MultiKueue worker cluster is left)"
	case left > 0:
		waiting = fmt.Sprintf(" (%d of its pods are left)", left)
	case len(finalizers) > 0:
		waiting = " (finalizers: " + strings.Join(finalizers, ", ") + ")"
	}
	return fmt.Errorf("the %s is still being deleted after %v%s: what should delete it may be down; see it with generator status %s -n %s",
		ref, deletionPolls*c.every(), waiting, ref.Name, ref.Namespace)
}
