package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DefaultDeletionWait bounds the wait for a deleted job to be gone,
// unless Client.DeletionWait says otherwise: its controller deletes what
// it made first, and may be down.
const DefaultDeletionWait = 5 * time.Minute

// Deletion is what Delete did.
type Deletion struct {
	Ref Ref
	// State is the job's state when it was deleted.
	State State
	// Pods is how many pods it had then; -1 when they could not be read
	// (and so were not waited for).
	Pods int
	// Waited is true when Delete waited until the job and its pods were
	// gone.
	Waited bool
}

// String says what Delete did.
func (d Deletion) String() string {
	pods := map[int]string{-1: "its pods not read, nor waited for", 0: "with no pods", 1: "with 1 pod"}[d.Pods]
	if pods == "" {
		pods = fmt.Sprintf("with %d pods", d.Pods)
	}
	if !d.Waited {
		return fmt.Sprintf("deleting %s (it was %s, %s) in the foreground, what it made first; not waiting until it is gone (--wait=false)", d.Ref, d.State, pods)
	}
	return fmt.Sprintf("deleted %s (it was %s, %s), and what it made", d.Ref, d.State, pods)
}

// Delete deletes a job and what it made, in the foreground (what it made
// goes first); with wait, it waits until the job and its pods are gone.
// The error is NotFound when there is no such job.
func (c *Client) Delete(ctx context.Context, ref Ref, wait bool) (Deletion, error) {
	obj, err := c.get(ctx, ref)
	if err != nil {
		return Deletion{}, err
	}
	s, podList, _, err := c.readJob(ctx, obj)
	if err != nil {
		return Deletion{}, err
	}
	done := Deletion{Ref: ref, State: s.State, Pods: len(podList)}
	if s.Pods.Unread {
		done.Pods = -1
	}
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

// gone waits until a deleted job is gone, and with holder (the cluster that
// holds its pods), its pods too: on a MultiKueue worker, its copy and the
// copy's pods, which MultiKueue deletes after the job. It watches each
// rather than reading it again and again, so that what it asks does not
// grow with the pods nor with the time the deletion takes.
func (c *Client) gone(ctx context.Context, old *unstructured.Unstructured, holder *Client) error {
	ref := Ref{Kind: old.GetKind(), Namespace: old.GetNamespace(), Name: old.GetName()}
	wait := cmp.Or(c.DeletionWait, DefaultDeletionWait)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	k := kindOf(old)
	byName := metav1.ListOptions{FieldSelector: "metadata.name=" + ref.Name}
	other := false
	left, err := c.objects(k.resource, ref.Namespace).Drain(ctx, byName, func(obj metav1.Object) bool {
		if obj.GetName() != ref.Name {
			return false
		}
		other = other || obj.GetUID() != old.GetUID()
		return obj.GetUID() == old.GetUID()
	})
	waiting := ""
	switch {
	case other:
		return fmt.Errorf("another %s was created while the old one was deleted; see what it is (generator status %s -n %s)", ref, ref.Name, ref.Namespace)
	case err == nil && holder != nil && holder != c:
		left, err = holder.objects(k.resource, ref.Namespace).Drain(ctx, byName, func(obj metav1.Object) bool { return obj.GetName() == ref.Name })
		if len(left) > 0 {
			waiting = " (its copy on its MultiKueue worker cluster is left)"
		}
	case len(left) > 0:
		if finalizers := left[0].GetFinalizers(); len(finalizers) > 0 {
			waiting = " (finalizers: " + strings.Join(finalizers, ", ") + ")"
		}
	}
	if err == nil && holder != nil {
		// Pods the user may not list are not waited for.
		left, err = holder.podObjects(ref.Namespace).Drain(ctx, metav1.ListOptions{LabelSelector: k.selector(ref.Name)},
			func(pod metav1.Object) bool { return k.owns(old, pod) })
		if apierrors.IsForbidden(err) {
			return nil
		}
		if len(left) > 0 {
			waiting = fmt.Sprintf(" (%d of its pods are left)", len(left))
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("the %s is still being deleted after %v%s: what should delete it may be down; see it with generator status %s -n %s",
			ref, wait, waiting, ref.Name, ref.Namespace)
	}
	return c.failed(err, "waiting for the "+ref.String()+" to be deleted")
}
