package cluster

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/torchwrap/generator/pkg/failure"
)

// A refusal is the API server's refusal to create a job's pods, which no
// pod says, since none was made: the controller that creates them says it
// in a Warning event (the training operator's FailedCreatePod, a JobSet's
// Jobs' FailedCreate), and the AppWrapper in its condition of the job it
// wraps (CreateFailed). It is a failure of the attempt (failure.Refused),
// kept as any other, and the job's cause while its pods are refused.

// makesPods tells whether an object an event is about is one whose
// controller creates the pods of the job obj (its kind's podMaker): the
// job itself, the job an AppWrapper wraps (of its name), or a Job of its
// JobSet, <name>-<replicated job>-<index>.
func makesPods(obj *unstructured.Unstructured, about corev1.ObjectReference) bool {
	k := kindOf(obj)
	if k != nil && k.name == "AppWrapper" {
		k = kindNamed(stringAt(innerOf(obj.Object), "kind"))
	}
	if k == nil {
		return false
	}
	if k.podMaker == "" {
		return about.Kind == k.name && about.Name == obj.GetName()
	}
	rest, ok := strings.CutPrefix(about.Name, obj.GetName()+"-")
	i := strings.LastIndex(rest, "-")
	if about.Kind != k.podMaker || !ok || i <= 0 {
		return false
	}
	_, err := strconv.Atoi(rest[i+1:])
	return err == nil
}

// refusal is a refusal of the job's pods, and the object whose controller
// said it: the job or Job that makes an attempt's pods.
type refusal struct {
	by      types.UID
	failure failure.Failure
}

// refusalOf reads the refusal of the job's pods that an event says, of an
// object that makes them, since the job was made (not one of an earlier
// job of its name); false for any other event.
func refusalOf(obj *unstructured.Unstructured, e *corev1.Event) (refusal, bool) {
	if !makesPods(obj, e.InvolvedObject) || eventTime(e).Before(obj.GetCreationTimestamp().Time) {
		return refusal{}, false
	}
	f, ok := failure.FromRefusal(e, e.InvolvedObject.Kind+" "+e.InvolvedObject.Name)
	return refusal{by: e.InvolvedObject.UID, failure: f}, ok
}

// Refusal is the refusal of the job's pods that a Warning event says, for
// the watch of its failures (podwatch.Job).
func (w *watched) Refusal(e *corev1.Event) (failure.Failure, bool) {
	r, ok := refusalOf(w.job.get(), e)
	return r.failure, ok
}

// refusedAttempts are the refusals of the job's pods by the attempt they
// were made in, from those the events say (refused) and the job's own
// condition (s, its picture): the refusals of one object, the job or Job
// that makes an attempt's pods, are of one attempt, and the objects, the
// latest first, of the attempts back from the one the job is in; or, while
// it runs and its events hold no more objects than its retries, from the
// last that failed (its current attempt has made no object refused yet).
func refusedAttempts(obj *unstructured.Unstructured, refused []refusal, s Status) map[int][]failure.Failure {
	type group struct {
		first    time.Time
		failures []failure.Failure
	}
	groups := map[types.UID]*group{}
	for _, r := range refused {
		f := r.failure
		g, ok := groups[r.by]
		if !ok {
			g = &group{first: f.At}
			groups[r.by] = g
		}
		if f.At.Before(g.first) {
			g.first = f.At
		}
		if !slices.ContainsFunc(g.failures, func(had failure.Failure) bool { return had.Key == f.Key }) {
			g.failures = append(g.failures, f)
		}
	}
	ordered := make([]*group, 0, len(groups))
	for _, g := range groups {
		ordered = append(ordered, g)
	}
	slices.SortFunc(ordered, func(a, b *group) int { return cmp.Compare(b.first.UnixNano(), a.first.UnixNano()) })
	top := attempt(obj)
	ended := s.State == Failed || s.Phase == "Resetting" || s.Phase == "Restarting"
	if !ended && len(ordered) <= int(s.Retries) {
		top = int(s.Retries)
	}
	out := map[int][]failure.Failure{}
	for i, g := range ordered {
		if top-i < 1 {
			break
		}
		out[top-i] = g.failures
	}
	if f, ok := failure.Refusing(s.Reason, s.Message, obj.GetKind()+" "+obj.GetName(), string(obj.GetUID()), time.Now()); ok {
		out[attempt(obj)] = append(out[attempt(obj)], f)
	}
	return out
}

// certain tells whether a refusal of the job's pods will refuse them every
// time: a guard that judges the pod alone (Pod Security, a LimitRange, a
// webhook), or a ResourceQuota that allows less than the whole job asks
// for.
func certain(obj *unstructured.Unstructured, f failure.Failure) bool {
	if f.Certain {
		return true
	}
	job, err := JobOf(obj)
	if err != nil {
		return false
	}
	for name, limit := range f.QuotaLimits() {
		if need, ok := QuotaUse(name, job.PodSets); ok && need.Cmp(limit) > 0 {
			return true
		}
	}
	return false
}

// refusalNow is the refusal of the attempt the job is in, of those
// refused, when its pods are refused; nil when they are not.
func refusalNow(obj *unstructured.Unstructured, refused map[int][]failure.Failure) *failure.Failure {
	fs := refused[attempt(obj)]
	if len(fs) == 0 {
		return nil
	}
	root, _ := failure.Attempt{Failures: fs}.Root()
	return &root
}

// refused takes into a follower's reading (s, of the job obj) the refusal
// of the job's pods in the attempt it is in, which the watch noticed (or
// the job's own condition says): the job's cause, and its end when it will
// refuse them every time.
func (n *noticing) refused(s *Status, obj *unstructured.Unstructured) {
	refused := refusedAttempts(obj, nil, *s)
	if n.latest.Number == attempt(obj) {
		for _, f := range n.latest.Failures {
			if f.Reason == failure.Refused {
				refused[attempt(obj)] = append(refused[attempt(obj)], f)
			}
		}
	}
	r := refusalNow(obj, refused)
	if r == nil {
		return
	}
	if s.Failure == nil || s.Failure.Reason == failure.Refused {
		s.Failure = r
	}
	if certain(obj, *r) {
		s.Refusal = r
	}
}

// refuse takes into the status s of the job obj the refusal of its pods in
// the attempt it is in, of those its events say (refused) and its own
// condition: the job's cause, unless it has one, and its Refusal when it
// will refuse them every time. It gives the refusals by attempt.
func refuse(obj *unstructured.Unstructured, refused []refusal, s *Status) map[int][]failure.Failure {
	attempts := refusedAttempts(obj, refused, *s)
	if r := refusalNow(obj, attempts); r != nil && s.Failure == nil {
		s.Failure = r
		if certain(obj, *r) {
			s.Refusal = r
		}
	}
	return attempts
}

// refusalIndex holds, for list and logs, the events that may say a
// refusal of a namespace's pods, by the names of the jobs they may be of:
// a Job's event under each part of its name before a "-" too, one of which
// is its JobSet's. Each refusing reason is a list of its own (a field selector
// takes one reason): a few events, where all the Warning events of a
// namespace of 5,000 queued jobs are 5 MB.
type refusalIndex map[string][]*corev1.Event

func (c *Client) refusalIndex(ctx context.Context, namespace string) (refusalIndex, error) {
	reasons := failure.RefusingReasons()
	lists := make([]*unstructured.UnstructuredList, len(reasons))
	errs := make([]error, len(reasons))
	var wg sync.WaitGroup
	for i, reason := range reasons {
		wg.Go(func() {
			lists[i], errs[i] = c.Dynamic.Resource(events).Namespace(namespace).List(ctx,
				metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning + ",reason=" + reason})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	index := refusalIndex{}
	for _, list := range lists {
		for _, item := range list.Items {
			e := &corev1.Event{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, e) != nil {
				continue
			}
			name := e.InvolvedObject.Name
			for i := 1; i < len(name); i++ {
				if name[i] == '-' {
					index[e.Namespace+"/"+name[:i]] = append(index[e.Namespace+"/"+name[:i]], e)
				}
			}
			index[e.Namespace+"/"+name] = append(index[e.Namespace+"/"+name], e)
		}
	}
	return index, nil
}

// of are the refusals of the job obj's pods.
func (x refusalIndex) of(obj *unstructured.Unstructured) []refusal {
	var out []refusal
	for _, e := range x[obj.GetNamespace()+"/"+obj.GetName()] {
		if r, ok := refusalOf(obj, e); ok {
			out = append(out, r)
		}
	}
	return out
}
