package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Submission is what Submit did.
type Submission struct {
	// Replaced is the state of the job of the same name that Submit deleted
	// first; "" when there was none.
	Replaced State
	// Namesakes are the jobs of other kinds that have the job's name in its
	// namespace, as named tells them apart: a command line names each with
	// its kind from now on.
	Namesakes []Ref
}

// SameName is the warning of a job submitted (job) beside jobs of other
// kinds of its name, its Namesakes: how commands tell them apart from now
// on; "" when there are none.
func (s Submission) SameName(job Ref) string {
	if len(s.Namesakes) == 0 {
		return ""
	}
	others := make([]string, len(s.Namesakes))
	forms := []string{job.Qualified()}
	for i, r := range s.Namesakes {
		others[i] = Indefinite(r.Kind)
		forms = append(forms, r.Qualified())
	}
	return fmt.Sprintf("namespace %q has %s of that name too; status, logs, stop, resume and delete need the kind to tell them apart (%s), or choose another jobName",
		job.Namespace, sentence(others, "and"), sentence(forms, "or"))
}

// Busy is the error for a job of the same name that has not finished.
type Busy struct{ Status Status }

func (e Busy) Error() string {
	s := e.Status
	return fmt.Sprintf("%s %q exists in namespace %q already, and has not finished: %s; wait for it to finish (generator status %s -n %s), "+
		"delete it (generator delete %s -n %s), or submit with --force to delete it and submit anew",
		s.Kind, s.Name, s.Namespace, s.summary(), s.Name, s.Namespace, s.Name, s.Namespace)
}

// Submit creates the job in its namespace by server-side apply, under the
// generator's field manager. A job of the same name that has finished is
// deleted first, and waited for until it is gone: applied over, it would
// not run again. One that has not finished is refused (Busy), unless force.
// Jobs of other kinds of its name are its Namesakes. The ConfigMaps of
// its workspace, if any, are created after it, owned by it; when they
// cannot be, the job is deleted again.
func (c *Client) Submit(ctx context.Context, job *Job, force bool) (Submission, error) {
	ref := job.Ref()
	resource := c.Dynamic.Resource(ref.resource()).Namespace(ref.Namespace)
	var done Submission
	namesakes, err := c.namesakes(ctx, ref)
	if err != nil {
		return done, err
	}
	done.Namesakes = namesakes
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
		status, _, _, err := c.readJob(ctx, old)
		if err != nil {
			return done, err
		}
		if !status.State.Finished() && status.State != Deleting && !force {
			return done, Busy{Status: status}
		}
		if err := c.remove(ctx, old); err != nil {
			return done, err
		}
		if err := c.gone(ctx, old, nil); err != nil {
			return done, err
		}
		done.Replaced = status.State
	}
	if err := c.clearWorkspace(ctx, job); err != nil {
		return done, err
	}
	data, err := json.Marshal(job.Object.Object)
	if err != nil {
		return done, err
	}
	overwrite := true
	created, err := resource.Patch(ctx, ref.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &overwrite})
	if err != nil {
		return done, c.failed(err, "submitting the "+ref.String())
	}
	if err := c.shipWorkspace(ctx, job, created); err != nil {
		if undo := c.remove(ctx, created); undo != nil {
			return done, fmt.Errorf("%w; and the %s, submitted before it, could not be deleted again: %v", err, ref, undo)
		}
		return done, fmt.Errorf("%w; the %s, submitted before it, was deleted again", err, ref)
	}
	return done, nil
}

// failed words an error of the API server, or says that it did not answer.
func (c *Client) failed(err error, doing string) error {
	if u := c.Unreached(err); u != nil {
		return u
	}
	return fmt.Errorf("%s: %s", doing, Message(err))
}
