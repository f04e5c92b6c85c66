package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// deletionPolls bounds the wait for a job Submit replaces to be gone: its
// controller deletes what it made first, and may be down.
const deletionPolls = 150

// Submission is what Submit did.
type Submission struct {
	// Replaced is the state of the job of the same name that Submit deleted
	// first; "" when there was none.
	Replaced State
}

// Busy is the error for a job of the same name that has not finished.
type Busy struct{ Status Status }

func (e Busy) Error() string {
	s := e.Status
	return fmt.Sprintf("%s %q exists in namespace %q already, and has not finished: %s; wait for it to finish (generator status %s -n %s), "+
		"delete it (kubectl delete %s %s -n %s), or submit with --force to delete it and submit anew",
		s.Kind, s.Name, s.Namespace, s.summary(), s.Name, s.Namespace, strings.ToLower(s.Kind), s.Name, s.Namespace)
}

// Submit creates the job in its namespace by server-side apply, under the
// generator's field manager. A job of the same name that has finished is
// deleted first, and waited for until it is gone: applied over, it would
// not run again. One that has not finished is refused (Busy), unless force.
func (c *Client) Submit(ctx context.Context, job *Job, force bool) (Submission, error) {
	ref := job.Ref()
	resource := c.Dynamic.Resource(ref.resource()).Namespace(ref.Namespace)
	var done Submission
	old, err := resource.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return done, c.failed(err, "reading the "+ref.String())
	case metav1.GetControllerOf(old) != nil:
		// Another job's part, such as the JobSet an AppWrapper or a
		// TrainJob of that name made: not this one's to replace, even
		// with force.
		owner := metav1.GetControllerOf(old)
		return done, fmt.Errorf("the %s is a part of %s %q, which made it: submitting would replace a part of another job; choose another jobName",
			ref, owner.Kind, owner.Name)
	default:
		status, err := c.statusOf(ctx, old)
		if err != nil {
			return done, err
		}
		if !status.State.Finished() && status.State != Deleting && !force {
			return done, Busy{Status: status}
		}
		if err := c.remove(ctx, resource, old); err != nil {
			return done, err
		}
		done.Replaced = status.State
	}
	data, err := json.Marshal(job.Object.Object)
	if err != nil {
		return done, err
	}
	overwrite := true
	_, err = resource.Patch(ctx, ref.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &overwrite})
	if err != nil {
		return done, c.failed(err, "submitting the "+ref.String())
	}
	return done, nil
}

// failed words an error of the API server, or says that it did not answer.
func (c *Client) failed(err error, doing string) error {
	if u := c.reachable(err); u != nil {
		return u
	}
	return fmt.Errorf("%s: %s", doing, message(err))
}

// remove deletes a job, in the foreground (what it made goes first), and
// waits until it is gone.
func (c *Client) remove(ctx context.Context, resource dynamic.ResourceInterface, old *unstructured.Unstructured) error {
	ref := Ref{Kind: old.GetKind(), Namespace: old.GetNamespace(), Name: old.GetName()}
	if old.GetDeletionTimestamp() == nil {
		foreground, uid := metav1.DeletePropagationForeground, old.GetUID()
		err := resource.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &foreground, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return c.failed(err, "deleting the "+ref.String())
		}
	}
	last := old
	for range deletionPolls {
		obj, err := resource.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return c.failed(err, "waiting for the "+ref.String()+" to be deleted")
		case obj.GetUID() != old.GetUID():
			return fmt.Errorf("another %s was created while the old one was deleted; see what it is (generator status %s -n %s)", ref, ref.Name, ref.Namespace)
		}
		last = obj
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.every()):
		}
	}
	waiting := ""
	if finalizers := last.GetFinalizers(); len(finalizers) > 0 {
		waiting = " (finalizers: " + strings.Join(finalizers, ", ") + ")"
	}
	return fmt.Errorf("the %s is still being deleted after %v%s: what should delete it may be down; submit again once it is gone",
		ref, deletionPolls*c.every(), waiting)
}
