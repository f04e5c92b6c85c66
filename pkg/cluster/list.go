package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/torchwrap/generator/pkg/failure"
)

// ListOptions say which jobs List shows.
type ListOptions struct {
	// Namespace is the namespace listed; "" for every namespace.
	Namespace string
	// Selector is a label selector the jobs match.
	Selector string
	// Everyone lists the jobs of the kinds the generator makes whoever
	// made them; otherwise only those that carry its Marker.
	Everyone bool
	// States keeps the jobs in these states; none keeps all.
	States []State
	// Why reads every job's Kueue Workload, for the lines that say why
	// each job is where it is (its ClusterQueue, Workload, reason and
	// message: -o wide, json and yaml); without it, only the Workloads a
	// line needs are read.
	Why bool
}

// Listing is what List found: the jobs, and what could not be read.
type Listing struct {
	Jobs  []Status `json:"items"`
	Notes []string `json:"notes,omitempty"`
	// Denied is what the user's role kept from the listing, for one line
	// (Denied.String); nothing of the kinds it may not list, which hold no
	// job it may see.
	Denied Denied `json:"denied,omitempty"`
	// NoKind is true when the role lets the user list no kind of job at
	// all where it was asked (with -A: in all namespaces at once).
	NoKind bool `json:"-"`
}

// List lists the jobs in a namespace, or in all: its pods, the Warning
// events that refuse them, and the jobs of each kind the cluster serves,
// all at once, each list read as it comes (a job's JSON kept as it came,
// when it is one to show), then each job's picture made, one job read
// whole at a time. Kueue's visibility API is asked for the Workloads
// pending in each LocalQueue the jobs name, as they stream in (a page of
// a thousand at a time): its answer is all a queued job's line needs of
// its Workload. The Workloads themselves, whose JSON holds the jobs' pod
// templates again, are listed once when a line needs more: when the lines
// say why (opts.Why), when Kueue holds a job its queue does not list
// (stopped, admitted but not started, or waiting to be queued again), or
// when MultiKueue runs one on a worker cluster. Never one round trip per
// job, and the memory grows with the jobs' JSON, not with their decoded
// objects. A job another job made (an AppWrapper's component, a TrainJob's
// JobSet) is part of that one. The error is Unreachable when the cluster
// does not answer.
func (c *Client) List(ctx context.Context, opts ListOptions) (Listing, error) {
	var out Listing
	note := func(format string, args ...any) { out.Notes = append(out.Notes, fmt.Sprintf(format, args...)) }
	var owned map[types.UID]*workload
	var pods podIndex
	var refusals refusalIndex
	var wlErr, podsErr, eventsErr error
	var jobs []json.RawMessage
	var errs []error
	queues := queueAnswers{c: c, asked: map[string]*queueAnswer{}, slots: make(chan struct{}, askers)}
	var wg sync.WaitGroup
	if opts.Why {
		wg.Go(func() { owned, wlErr = c.workloads(ctx, opts.Namespace, "") })
	}
	wg.Go(func() { pods, podsErr = c.podIndex(ctx, opts.Namespace) })
	wg.Go(func() { refusals, eventsErr = c.refusalIndex(ctx, opts.Namespace) })
	wg.Go(func() {
		errs = c.eachJob(ctx, opts.Namespace, opts.Selector, kinds, func(k *kind, meta *metav1.PartialObjectMetadata, raw json.RawMessage) {
			if (opts.Everyone || meta.Annotations[Marker] != "") && !made(meta) {
				jobs = append(jobs, raw)
				if queue := meta.Labels[QueueLabel]; k.kueue && queue != "" {
					queues.ask(ctx, meta.Namespace, queue)
				}
			}
		})
	})
	wg.Wait()
	queues.wait()
	for _, err := range append([]error{wlErr, podsErr, eventsErr}, errs...) {
		if c.Unreached(err) != nil {
			return out, c.Unreached(err)
		}
	}
	if err := out.kindsListed(errs, opts.Selector); err != nil {
		return out, err
	}
	// The pods of a job a MultiKueue manager dispatched are on its worker
	// cluster: one list there too, for each worker that runs some.
	on := map[*Client]podIndex{c: pods}
	unread := map[string]bool{}
	show := func(obj *unstructured.Unstructured, wl *workload) {
		holder, worker, err := c.holder(ctx, wl)
		index := on[holder]
		if _, listed := on[holder]; err == nil && !listed {
			index, err = holder.podIndex(ctx, opts.Namespace)
			on[holder] = index
		}
		if err != nil && !unread[worker.Name] {
			unread[worker.Name] = true
			note("pods on worker cluster %s: %v", worker.Name, err)
		}
		podsRead := err == nil && (holder != c || podsErr == nil) && (holder == c || !unread[worker.Name])
		s, err := picture(obj, index.of(obj), wl)
		s.Worker, s.Pods.Unread = worker, !podsRead
		if err != nil {
			// One job whose status cannot be read does not hide the others.
			note("%v", err)
			return
		}
		refuse(obj, refusals.of(obj), &s)
		if len(opts.States) == 0 || slices.Contains(opts.States, s.State) {
			out.Jobs = append(out.Jobs, s)
		}
	}
	// The jobs whose lines need their Workloads, kept until they are read.
	var later []json.RawMessage
	var uids []string
	for i, raw := range jobs {
		jobs[i] = nil // read once, then let go
		obj, err := objectOf(raw)
		if err != nil {
			note("reading a job: %v", err)
			continue
		}
		wl := owned[obj.GetUID()]
		if !opts.Why {
			if wl = queues.placed[obj.GetUID()]; wl == nil && needsWorkload(obj) {
				later, uids = append(later, raw), append(uids, string(obj.GetUID()))
				continue
			}
		}
		show(obj, wl)
	}
	if len(later) > 0 {
		owned, wlErr = c.workloadsOfJobs(ctx, opts.Namespace, uids)
		if c.Unreached(wlErr) != nil {
			return out, c.Unreached(wlErr)
		}
		for _, raw := range later {
			obj, _ := objectOf(raw) // read once already
			show(obj, owned[obj.GetUID()])
		}
	}
	out.besideTheJobs(opts.Namespace, wlErr, podsErr, eventsErr)
	sort.Slice(out.Jobs, func(i, j int) bool {
		a, b := out.Jobs[i], out.Jobs[j]
		return a.Namespace+"/"+a.Name+"/"+a.Kind < b.Namespace+"/"+b.Name+"/"+b.Kind
	})
	queues.place(out.Jobs, note, &out.Denied)
	return out, nil
}

// kindsListed says what the lists of the kinds' jobs answered: NoKind when
// the role let the user list none; the error of a selector the API server
// refused, or of a list that failed.
func (l *Listing) kindsListed(errs []error, selector string) error {
	l.NoKind = true
	for i, k := range kinds {
		switch err := errs[i]; {
		case err == nil, apierrors.IsNotFound(err):
			// A kind not served here answers 404.
			l.NoKind = false
		case apierrors.IsForbidden(err):
			// The user may see no job of that kind here: nothing to say.
		case apierrors.IsBadRequest(err):
			return fmt.Errorf("-l %s: %s", selector, Message(err))
		default:
			return fmt.Errorf("listing %s: %w", Plural(k.name), err)
		}
	}
	return nil
}

// besideTheJobs says what List could not read beside the jobs: the role may
// keep each from it (the line of rights), or one may fail alone (a note).
// A Kueue not installed serves no Workloads (404).
func (l *Listing) besideTheJobs(namespace string, wlErr, podsErr, eventsErr error) {
	for _, beside := range []struct {
		err      error
		what     string
		resource schema.GroupResource
		name     string
	}{
		{wlErr, "why a job waits (Kueue's Workloads)", workloadsResource, "Kueue Workloads"},
		{podsErr, "the counts of the pods", podsResource, "pods"},
		{eventsErr, "the refusals of the jobs' pods (their events)", eventsResource, "events"},
	} {
		switch err := beside.err; {
		case err == nil, apierrors.IsNotFound(err):
		case apierrors.IsForbidden(err):
			l.Denied.Add(beside.what, Right{Verb: "list", Resource: beside.resource, Namespace: namespace})
		default:
			l.Notes = append(l.Notes, fmt.Sprintf("%s: %v", beside.name, err))
		}
	}
}

// workloadsOfJobs lists the Workloads of the jobs of these uids: those of a
// few jobs by Kueue's label of their uids (the API server sends no others),
// else all of the namespace's.
func (c *Client) workloadsOfJobs(ctx context.Context, namespace string, uids []string) (map[types.UID]*workload, error) {
	selector := ""
	if len(uids) <= fewWorkloads {
		selector = jobUIDLabel + " in (" + strings.Join(uids, ",") + ")"
	}
	return c.workloads(ctx, namespace, selector)
}

// made tells whether another job made this one: its controller is of a
// kind the generator makes (an AppWrapper, a TrainJob).
func made(obj metav1.Object) bool {
	owner := metav1.GetControllerOf(obj)
	return owner != nil && kindNamed(owner.Kind) != nil
}

// fewWorkloads is how many Workloads List asks for by their jobs' uids at
// most, in one label selector of some 4 KB; more are listed all.
const fewWorkloads = 100

// needsWorkload tells whether the line of a job its queue does not list
// pending needs the job's Workload: Kueue may hold the job (of a kind
// Kueue manages, suspended: stopped, admitted but not started yet, waiting
// to be queued again, or without a LocalQueue, which the Workload says),
// or MultiKueue runs it on the worker cluster its Workload names.
func needsWorkload(obj *unstructured.Unstructured) bool {
	k := kindOf(obj)
	if !k.kueue {
		return false
	}
	manager, _, _ := unstructured.NestedString(obj.Object, k.managedBy...)
	return k.suspended(obj) || manager == MultiKueueController
}

// queueAnswers are what Kueue's visibility API says of the LocalQueues the
// listed jobs name: each asked once, a few at a time, as the jobs stream
// in; after wait, placed are the Workloads pending in them, by the uid of
// the job that owns each.
type queueAnswers struct {
	c      *Client
	asked  map[string]*queueAnswer // namespace/queue
	slots  chan struct{}           // one for each queue asked at the moment
	asking sync.WaitGroup
	placed map[types.UID]*workload
}

type queueAnswer struct {
	namespace, queue string
	pending          []pendingWorkload
	err              error
}

// askers is how many LocalQueues List asks at once.
const askers = 8

// ask asks for the pending Workloads of a LocalQueue, unless asked; not
// safe for concurrent use (eachJob's take is not called concurrently).
func (q *queueAnswers) ask(ctx context.Context, namespace, queue string) {
	key := namespace + "/" + queue
	if q.asked[key] != nil {
		return
	}
	answer := &queueAnswer{namespace: namespace, queue: queue}
	q.asked[key] = answer
	q.asking.Go(func() {
		q.slots <- struct{}{}
		defer func() { <-q.slots }()
		answer.pending, answer.err = q.c.pending(ctx, namespace, queue, "")
	})
}

// wait waits for the answers, and finds the Workloads pending in them: as
// much of each as its job's line needs.
func (q *queueAnswers) wait() {
	q.asking.Wait()
	q.placed = map[types.UID]*workload{}
	for _, answer := range q.asked {
		for _, p := range answer.pending {
			wl := &workload{workloadMeta: p.workloadMeta, Placed: true}
			wl.Spec.QueueName = answer.queue
			for _, ref := range p.OwnerReferences {
				q.placed[ref.UID] = wl
			}
		}
	}
}

// place gives the queued jobs their positions in their queues, and says
// once when the visibility API did not answer for one that holds some.
func (q *queueAnswers) place(jobs []Status, note func(string, ...any), denied *Denied) {
	positions := map[string]int64{} // namespace/workload
	for _, answer := range q.asked {
		for _, p := range answer.pending {
			positions[answer.namespace+"/"+p.Name] = p.PositionInLocalQueue + 1
		}
	}
	failed := false
	for i := range jobs {
		s := &jobs[i]
		if s.State != Queued || s.Workload == "" || s.Queue == "" {
			continue
		}
		s.Position = positions[s.Namespace+"/"+s.Workload]
		answer := q.asked[s.Namespace+"/"+s.Queue]
		if answer == nil || answer.err == nil || failed {
			continue
		}
		failed = true
		if apierrors.IsForbidden(answer.err) {
			denied.Add("the positions in the queues", Right{Verb: "get", Resource: pendingWorkloadsResource, Namespace: s.Namespace})
		} else {
			note("positions in the queues: Kueue's visibility API (%s) does not answer: %s", visibleQueues.GroupVersion(), Message(answer.err))
		}
	}
}

// podIndex is the pods of a namespace (or of all), found by the labels the
// kinds' controllers give them, or by their owner.
type podIndex struct {
	labelled map[string][]corev1.Pod // label=value/namespace
	owned    map[types.UID][]corev1.Pod
}

func (c *Client) podIndex(ctx context.Context, namespace string) (podIndex, error) {
	index := podIndex{labelled: map[string][]corev1.Pod{}, owned: map[types.UID][]corev1.Pod{}}
	list, err := c.listPods(ctx, namespace, metav1.ListOptions{})
	if err != nil {
		return index, err
	}
	all := list.Items
	labels := map[string]bool{}
	for _, k := range kinds {
		if k.podLabel != "" {
			labels[k.podLabel] = true
		}
	}
	for _, pod := range all {
		for label := range labels {
			if value, ok := pod.Labels[label]; ok {
				key := label + "=" + value + "/" + pod.Namespace
				index.labelled[key] = append(index.labelled[key], pod)
			}
		}
		for _, ref := range pod.OwnerReferences {
			index.owned[ref.UID] = append(index.owned[ref.UID], pod)
		}
	}
	return index, nil
}

// of are the pods of a job.
func (p podIndex) of(obj *unstructured.Unstructured) []corev1.Pod {
	k := kindOf(obj)
	if k.podLabel == "" {
		return p.owned[obj.GetUID()]
	}
	return p.labelled[k.selector(obj.GetName())+"/"+obj.GetNamespace()]
}

// shownState is the job's state in a table: Refused while the API server
// refuses its pods, which it says in its cause.
func (s Status) shownState() string {
	if s.Refused() {
		return "Refused"
	}
	return string(s.State)
}

// Refused tells whether the API server refuses the pods of a job that has
// not finished: its cause is that refusal.
func (s Status) Refused() bool {
	return s.Failure != nil && s.Failure.Reason == failure.Refused && !s.State.Finished()
}

// Table writes the listing as a table, as kubectl get does: with the
// namespace of each job when allNamespaces, more columns when wide. now
// is the time the ages are counted to.
func (l Listing) Table(allNamespaces, wide bool, now time.Time) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 3, ' ', 0)
	// The worker cluster of a job a MultiKueue manager dispatched, when
	// there are such jobs.
	workers := slices.ContainsFunc(l.Jobs, func(s Status) bool { return s.Worker != nil })
	columns := []string{"NAME", "KIND", "STATE", "QUEUE", "POSITION", "PODS", "GPUS", "RESTARTS", "AGE"}
	if workers {
		columns = slices.Insert(columns, 3, "WORKER")
	}
	if allNamespaces {
		columns = append([]string{"NAMESPACE"}, columns...)
	}
	if wide {
		columns = append(columns, "CLUSTERQUEUE", "WORKLOAD", "POD-RESTARTS", "WHY")
	}
	fmt.Fprintln(w, strings.Join(columns, "\t"))
	for _, s := range l.Jobs {
		pods := fmt.Sprintf("%d/%d", s.Pods.Ready, s.Pods.Expected)
		if s.Pods.Unread {
			pods = fmt.Sprintf("?/%d", s.Pods.Expected)
		}
		row := []string{s.Name, s.Kind, s.shownState(), dash(s.Queue), dash(count(s.Position)), pods,
			fmt.Sprint(s.GPUs), fmt.Sprint(s.Retries), age(s.Created, now)}
		if workers {
			worker := "-"
			if s.Worker != nil {
				worker = s.Worker.Name
			}
			row = slices.Insert(row, 3, worker)
		}
		if allNamespaces {
			row = append([]string{s.Namespace}, row...)
		}
		if wide {
			why := s.why()
			if s.Failure != nil {
				why = strings.TrimPrefix(why+"; "+s.Failure.String(), "; ")
			}
			row = append(row, dash(s.ClusterQueue), dash(s.Workload), fmt.Sprint(s.Pods.Restarts), dash(why))
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	w.Flush()
	return b.String()
}

func dash(text string) string {
	if text == "" {
		return "-"
	}
	return text
}

// count is a number that 0 leaves out.
func count(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// age is how long ago a job was created, as kubectl writes it: 5m, 3h, 2d.
func age(created, now time.Time) string {
	if created.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(created))
}
