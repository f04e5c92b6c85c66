package cluster

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// recentWarnings is how many Warning events status shows.
const recentWarnings = 5

// Event is a Warning event of a job's object or pod: FailedScheduling,
// BackOff, FailedMount, an eviction.
type Event struct {
	// Object is what it is about, as kubectl names it: Pod demo-worker-0.
	Object  string `json:"object"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Count is how many times it happened.
	Count int32     `json:"count"`
	Last  time.Time `json:"last,omitzero"`
}

// warnings are the recent Warning events of the job: of the job itself, of
// the job it wraps or makes (same name), of its Workload and of its pods;
// the latest first, one per object and reason. With them, the refusals of
// its pods that the events say (refusals).
func (c *Client) warnings(ctx context.Context, obj *unstructured.Unstructured, wl *workload, podList []corev1.Pod) ([]Event, []refusal, error) {
	list, err := c.Dynamic.Resource(events).Namespace(obj.GetNamespace()).List(ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
	if err != nil {
		return nil, nil, err
	}
	mine := map[string]bool{}
	for _, k := range kinds {
		mine[k.name+"/"+obj.GetName()] = true
	}
	if wl != nil {
		mine["Workload/"+wl.Name] = true
	}
	for _, p := range podList {
		mine["Pod/"+p.Name] = true
	}
	latest := map[string]Event{}
	var refused []refusal
	for _, item := range list.Items {
		var e corev1.Event
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &e) != nil || e.Type != corev1.EventTypeWarning {
			continue
		}
		if r, ok := refusalOf(obj, &e); ok {
			refused = append(refused, r)
		}
		about := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
		if !mine[about] {
			continue
		}
		last := eventTime(&e)
		count := max(e.Count, 1)
		if e.Series != nil {
			count = max(count, e.Series.Count)
		}
		key := about + "/" + e.Reason
		if had, ok := latest[key]; ok && had.Last.After(last) {
			continue
		}
		latest[key] = Event{Object: e.InvolvedObject.Kind + " " + e.InvolvedObject.Name, Reason: e.Reason, Message: oneLine(e.Message), Count: count, Last: last}
	}
	out := make([]Event, 0, len(latest))
	for _, e := range latest {
		out = append(out, e)
	}
	return recent(out), refused, nil
}

// eventTime is when an event happened last: its series' last, its last
// time, its time, or when it was made, the first an event has.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// recent are the latest of the events, the latest first.
func recent(out []Event) []Event {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Last.Equal(out[j].Last) {
			return out[i].Last.After(out[j].Last)
		}
		return out[i].Object+out[i].Reason < out[j].Object+out[j].Reason
	})
	return out[:min(len(out), recentWarnings)]
}
