package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// stoppedAnnotation marks a job that stop held, valued with what holds it:
// its own field, or its Kueue Workload's (Workload NAME spec.active).
// With Kueue's queue label, a suspended job would otherwise look like one
// that Kueue holds until it admits it, to whoever reads the job alone (a
// GitOps tool's health check).
const stoppedAnnotation = "torchwrap.dev/stopped"

// Hold is what Stop or Resume did: the field it set, and on what.
type Hold struct {
	Ref Ref
	// Stop is true for Stop, false for Resume.
	Stop bool
	// Object is what holds the job: its Kueue Workload (Workload
	// appwrapper-demo-7d9f2), or the job itself (PyTorchJob demo).
	Object string
	// Field is the field set to Value: spec.active (a Workload), or the
	// job's own spec.suspend, spec.runPolicy.suspend (PyTorchJob) or
	// spec.runMode.pause.enabled (T9k).
	Field string
	Value bool
	// Changed is false when the field held that value already.
	Changed bool
}

// Stop holds a job without deleting it: its pods go and its quota is
// freed, its objects and history stay. A job Kueue manages (it has a
// Workload) is held by its Workload's spec.active, as kueuectl stop
// workload does; Kueue then evicts it. Any other job by its own suspend
// field (T9k's: pause). Either way the job is marked stoppedAnnotation.
func (c *Client) Stop(ctx context.Context, ref Ref) (Hold, error) { return c.hold(ctx, ref, true) }

// Resume lets a held job go on: Kueue queues it again, or its controller
// starts it again.
func (c *Client) Resume(ctx context.Context, ref Ref) (Hold, error) { return c.hold(ctx, ref, false) }

func (c *Client) hold(ctx context.Context, ref Ref, stop bool) (Hold, error) {
	obj, err := c.get(ctx, ref)
	if err != nil {
		return Hold{}, err
	}
	k := kindOf(obj)
	queued := obj.GetLabels()[QueueLabel] != ""
	wl, err := c.workloadOf(ctx, obj)
	switch {
	case err == nil, apierrors.IsNotFound(err):
	case c.Unreached(err) != nil:
		return Hold{}, c.Unreached(err)
	case apierrors.IsForbidden(err) && queued:
		return Hold{}, kueueHolds(ref, stop, "list and patch")
	case apierrors.IsForbidden(err):
		// Without the queue label, Kueue does not manage the job.
	default:
		return Hold{}, fmt.Errorf("reading the Kueue Workload of the %s: %w", ref, err)
	}
	s, err := picture(obj, nil, wl)
	if err != nil {
		return Hold{}, err
	}
	verb := map[bool]string{true: "stop", false: "resume"}[stop]
	if s.State.Finished() || s.State == Deleting {
		return Hold{}, fmt.Errorf("the %s is %s: there is nothing to %s; submit it again to run it again", ref, s.State, verb)
	}
	if wl != nil {
		active := !stop
		h := Hold{Ref: ref, Stop: stop, Object: "Workload " + wl.Name, Field: "spec.active", Value: active,
			Changed: (wl.Spec.Active == nil || *wl.Spec.Active) != active}
		if h.Changed {
			err := c.patch(ctx, c.Kueue(ctx, "workloads"), ref.Namespace, wl.Name, map[string]any{"spec": map[string]any{"active": active}})
			if errors.As(err, &Forbidden{}) {
				return h, kueueHolds(ref, stop, "patch")
			}
			if err != nil {
				return h, err
			}
		}
		// The job says it too: Kueue suspends it as it suspends a job
		// it has not admitted yet. The mark follows the Workload, and is
		// set or taken away by a stop or resume that finds it wrong (one
		// whose second patch failed, a Workload held by kueuectl).
		var mark any // removed
		if stop {
			mark = h.Object + " " + h.Field
		}
		if (obj.GetAnnotations()[stoppedAnnotation] != "") == stop {
			return h, nil
		}
		return h, c.patch(ctx, k.resource, ref.Namespace, ref.Name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{stoppedAnnotation: mark}}})
	}
	field := strings.Join(k.suspend, ".")
	mark := obj.GetAnnotations()[stoppedAnnotation] != ""
	if queued && k.kueue && k.suspended(obj) && !mark {
		// Kueue holds a job it manages by the same field until it has
		// admitted its Workload: stopping or resuming it there would
		// fight Kueue.
		return Hold{}, fmt.Errorf("Kueue holds the %s in its queue and has made no Workload for it yet (its %s is true): there is nothing to %s yet; see it with generator status %s -n %s, and try again once Kueue has made its Workload",
			ref, field, verb, ref.Name, ref.Namespace)
	}
	h := Hold{Ref: ref, Stop: stop, Object: k.name + " " + ref.Name, Field: field, Value: stop, Changed: k.suspended(obj) != stop}
	if !h.Changed {
		return h, nil
	}
	var value any = stop
	for i := len(k.suspend) - 1; i >= 0; i-- {
		value = map[string]any{k.suspend[i]: value}
	}
	var annotation any // removed
	if stop {
		annotation = field
	}
	body := value.(map[string]any)
	body["metadata"] = map[string]any{"annotations": map[string]any{stoppedAnnotation: annotation}}
	return h, c.patch(ctx, k.resource, ref.Namespace, ref.Name, body)
}

// kueueHolds is the error for a role that may not stop or resume a job
// that Kueue manages: the job's own suspend field is no way round, as
// Kueue sets it back at once while the job's Workload is admitted.
func kueueHolds(ref Ref, stop bool, verbs string) error {
	verb, instead := "resume", ""
	if stop {
		verb, instead = "stop", fmt.Sprintf(", or free its GPUs with generator delete %s -n %s, which deletes the job", ref.Name, ref.Namespace)
	}
	return fmt.Errorf("your role does not let you %s a job Kueue manages: that takes %s on workloads.kueue.x-k8s.io in namespace %s (RBAC), as Kueue undoes a suspension of the job itself; "+
		"ask an administrator for it (generator access --roles has it)%s", verb, verbs, ref.Namespace, instead)
}

// patch changes an object by a JSON merge patch.
func (c *Client) patch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, body map[string]any) error {
	resource := gvr.GroupResource().String()
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = c.Dynamic.Resource(gvr).Namespace(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) && !IsWebhookDenial(err):
		return forbidden("patch", resource, namespace, "to hold or resume the job")
	}
	return c.failed(err, fmt.Sprintf("changing %s %s", resource, name))
}

// Forbidden is the error for a request RBAC refuses: which verb, on which
// resource, and what for; and the API server's refusal, when kept.
type Forbidden struct {
	Verb, Resource, Namespace, What string
	Err                             error
}

func forbidden(verb, resource, namespace, what string) error {
	return Forbidden{Verb: verb, Resource: resource, Namespace: namespace, What: what}
}

func (f Forbidden) Unwrap() error { return f.Err }

func (f Forbidden) Error() string {
	return fmt.Sprintf("you may not %s %s in namespace %q (RBAC), which it takes %s; ask an administrator for the verb %s on %s there",
		f.Verb, f.Resource, f.Namespace, f.What, f.Verb, f.Resource)
}

// String says what Stop or Resume did, and how to undo it.
func (h Hold) String() string {
	if !h.Changed {
		state := map[bool]string{true: "stopped already", false: "not stopped"}[h.Stop]
		return fmt.Sprintf("the %s is %s (%s: %s is %t)", h.Ref, state, h.Object, h.Field, h.Value)
	}
	if h.Stop {
		next := "its pods go, its quota is freed, its objects stay"
		if h.Field == "spec.active" {
			next = "Kueue evicts it: " + next
		}
		return fmt.Sprintf("stopped %s (%s: %s is %t now); %s; generator resume %s -n %s runs it again",
			h.Ref, h.Object, h.Field, h.Value, next, h.Ref.Name, h.Ref.Namespace)
	}
	next := "its controller starts it again"
	if h.Field == "spec.active" {
		next = "Kueue queues it again"
	}
	return fmt.Sprintf("resumed %s (%s: %s is %t now); %s; see how it does with generator status %s -n %s",
		h.Ref, h.Object, h.Field, h.Value, next, h.Ref.Name, h.Ref.Namespace)
}
