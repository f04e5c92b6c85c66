package cluster

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
	"github.com/torchwrap/generator/pkg/failure"
)

// Noticed is a failure of a job, noticed as it happened (by a follower), or
// read from a pod that still shows it (by status).
type Noticed struct {
	// Attempt is the run of the job it failed in, 1 for the first; Of how
	// many runs the job may make, 0 when not known.
	Attempt, Of int
	Failure     failure.Failure
	// NotKept says why the failure could not be kept on this machine.
	NotKept error
	// Setup, instead of a failure, is a setup command that failed in a pod
	// whose launch went on (or stopped, under setupErrexit); not kept.
	Setup *failure.SetupError
	// More is a failure beyond the first few of its attempt (see
	// noticing.add): it stands for them all, which are kept, not told.
	More bool
	// Lost, instead of a failure, says that the cluster cannot be reached,
	// or answers again.
	Lost *Lost
}

// failures notices the failures of a job's pods while it is followed, each
// once: it reads a failed container's last lines while its pod is there
// (the AppWrapper controller deletes the pods of a failed attempt), keeps
// the failure (Client.Keeper), and hands it to notice.
type failures struct {
	// client keeps the failures; pods is the cluster that holds the pods.
	client, pods *Client
	job          *reading
	notice       func(Noticed)
	// podMirror and warnings mirror the job's pods and the Warning events
	// of its namespace, and hand their changes to podChanges and
	// warningChanges.
	podMirror, warnings        *podwatch.Mirror
	podChanges, warningChanges chan podwatch.Change
	// seen are the job's pods seen, by uid; attempts the attempt each pod
	// failed in; noticed the keys of the failures noticed; scanned the
	// containers whose logs are read for failed setup commands; busy
	// counts the work under way: the changes of the mirrors not yet taken
	// in, and those reads.
	seen     map[types.UID]*corev1.Pod
	attempts map[types.UID]int
	noticed  map[string]bool
	scanned  map[string]bool
	busy     *atomic.Int64
	// read counts the failures of each attempt whose log's last lines
	// were read: when many pods fail at once, the first few say why.
	read map[int]int
}

// reading is the job as its follower last read it, which the watch of its
// failures reads too.
type reading struct {
	mu  sync.Mutex
	obj *unstructured.Unstructured
}

func (r *reading) set(obj *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obj = obj
}

func (r *reading) get() *unstructured.Unstructured {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.obj
}

// watchFailures mirrors the pods of a job (as its follower last read it)
// and the Warning events about them, on the cluster that holds them (on),
// and then, until ctx ends, notices each failure they show: the pods are
// listed before it returns, and watched from that list, so a pod that
// fails once the follower has read the job is seen, however soon it is
// deleted. It gives the mirror of the pods, which the follower reads them
// from; nil when they cannot be listed (not allowed, say), and then it
// notices nothing.
//
// It also reads the start of the log of each pod's training container, as
// it starts, for the setup commands that failed there, which it notices
// too. busy counts the work under way, so that a follower may wait for it
// once the job has finished.
func (c *Client) watchFailures(ctx context.Context, on *Client, job *reading, notice func(Noticed), busy *atomic.Int64) *podwatch.Mirror {
	obj := job.get()
	k := kindOf(obj)
	w := &failures{client: c, pods: on, job: job, notice: notice, seen: map[types.UID]*corev1.Pod{}, attempts: map[types.UID]int{}, noticed: map[string]bool{},
		scanned: map[string]bool{}, busy: busy, read: map[int]int{}, podChanges: make(chan podwatch.Change, 64), warningChanges: make(chan podwatch.Change, 64)}
	w.podMirror = podwatch.NewMirror(on.podObjects(obj.GetNamespace()), metav1.ListOptions{LabelSelector: k.selector(obj.GetName())},
		func(pod metav1.Object) bool { return k.owns(obj, pod) }, w.podChanges, busy)
	// Events are a help: the node controller says in them alone that a
	// pod's node stopped answering.
	w.warnings = podwatch.NewMirror(on.objects(events, obj.GetNamespace()), metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning},
		nil, w.warningChanges, busy)
	// What the user may not read is not asked again.
	again := func(err error) bool { return !apierrors.IsForbidden(err) }
	if w.podMirror.Start(ctx, again) != nil {
		return nil
	}
	go w.warnings.Run(ctx, again)
	go w.run(ctx)
	return w.podMirror
}

func (w *failures) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			// What was handed on and will not be taken in is not under way.
			w.busy.Add(-int64(len(w.podChanges) + len(w.warningChanges)))
			return
		case c := <-w.podChanges:
			w.podChanged(ctx, c)
			w.busy.Add(-1)
		case c := <-w.warningChanges:
			// A warning is about a pod: the pods' changes at hand are read
			// first, so that a pod told of by both is known by then.
		pending:
			for {
				select {
				case p := <-w.podChanges:
					w.podChanged(ctx, p)
					w.busy.Add(-1)
				default:
					break pending
				}
			}
			w.warning(ctx, c)
			w.busy.Add(-1)
		}
	}
}

// warning takes in a change of the Warning events of the job's namespace.
func (w *failures) warning(ctx context.Context, c podwatch.Change) {
	var e corev1.Event
	obj, ok := c.Obj.(*unstructured.Unstructured)
	if !ok || c.Deleted || runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &e) != nil || e.InvolvedObject.Kind != "Pod" {
		return
	}
	pod, ours := w.seen[e.InvolvedObject.UID]
	if !ours {
		// Held, its change not taken in yet.
		held, ok := w.podMirror.ByName(e.InvolvedObject.Name)
		pod, ours = held.(*corev1.Pod)
		ours = ok && ours && pod.UID == e.InvolvedObject.UID
	}
	if !ours {
		return
	}
	if f, ok := failure.FromEvent(&e, pod, w.member(pod)); ok {
		w.add(ctx, pod, f)
	}
}

// podChanged takes in a change of the job's pods.
func (w *failures) podChanged(ctx context.Context, c podwatch.Change) {
	if pod, ok := c.Obj.(*corev1.Pod); ok && !c.Deleted {
		w.seen[pod.UID] = pod
		w.pod(ctx, pod)
	}
}

// pod notices the failures a pod shows, and once its training container
// has started, the setup commands that fail in it.
func (w *failures) pod(ctx context.Context, pod *corev1.Pod) {
	for _, f := range failure.FromPod(pod, w.member(pod)) {
		w.add(ctx, pod, f)
	}
	obj := w.job.get()
	sc, ok := scanOf(obj, pod)
	key := fmt.Sprintf("%s/%s/%d", pod.UID, sc.container, sc.status.RestartCount)
	if !ok || w.scanned[key] {
		return
	}
	w.scanned[key] = true
	number, of := attempt(obj), runs(obj)
	w.busy.Add(1)
	go func() {
		defer w.busy.Add(-1)
		w.pods.setupErrors(ctx, pod, sc.container, sc.member, sc.launch, sc.status.State.Running != nil, func(e failure.SetupError) {
			w.notice(Noticed{Attempt: number, Of: of, Setup: &e})
		})
	}()
}

func (w *failures) member(pod *corev1.Pod) string { return memberOf(w.job.get(), pod) }

// add notices a failure of a pod, unless it was noticed already: with the
// last lines of its container's log, while they can be read, and kept.
func (w *failures) add(ctx context.Context, pod *corev1.Pod, f failure.Failure) {
	if w.noticed[f.Key] {
		return
	}
	w.noticed[f.Key] = true
	obj := w.job.get()
	if _, ok := w.attempts[pod.UID]; !ok {
		w.attempts[pod.UID] = attempt(obj)
	}
	number := w.attempts[pod.UID]
	if f.ExitCode != nil && w.read[number] < failure.WithLines {
		w.read[number]++
		w.pods.readLines(ctx, pod, &f)
	}
	w.notice(w.client.keep(obj, number, f))
}

// attempt is the run a job is in: 1, then one more at each retry; during
// a reset, the run that failed. A pod's failure is of the attempt the job
// is in when its follower notices it, as last read: a failure comes before
// the job's controller resets the job, or as it does (a job resetting has
// counted the retry already, and its pods are those of the attempt that
// failed), and the controller pauses before the next attempt. A pod's
// later failures are of the same attempt.
func attempt(obj *unstructured.Unstructured) int {
	var s Status
	if err := kindOf(obj).state(&s, obj); err != nil {
		return 1
	}
	if s.Phase == "Resetting" || s.Phase == "Restarting" {
		return int(s.Retries)
	}
	return int(s.Retries) + 1
}

// runs is how many runs a job may make (the kind's runs); 0 when it does
// not say.
func runs(obj *unstructured.Unstructured) int {
	if k := kindOf(obj); k.runs != nil {
		return k.runs(obj)
	}
	return 0
}

// keep keeps failures of an attempt of the job, in one write, when the
// client keeps failures (Keeper), and says what it noticed of the first.
func (c *Client) keep(obj *unstructured.Unstructured, attempt int, failures ...failure.Failure) Noticed {
	n := Noticed{Attempt: attempt, Of: runs(obj), Failure: failures[0]}
	if c.Keeper != nil {
		_, n.NotKept = c.Keeper.Keep(storyOf(c, obj), attempt, n.Of, failures...)
	}
	return n
}

// storyOf names a job's story in the Keeper.
func storyOf(c *Client, obj *unstructured.Unstructured) failure.Job {
	return failure.Job{Cluster: c.Server, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID())}
}

// readLines reads the last lines of a failed container's log, while its pod
// is there: more than the termination message keeps (2 KiB at most), and
// there is none unless terminationMessagePolicy is FallbackToLogsOnError.
// The termination message stays when the log cannot be read.
func (c *Client) readLines(ctx context.Context, pod *corev1.Pod, f *failure.Failure) {
	if c.LogSource == nil {
		return
	}
	status, ok := containerStatus(pod, f.Container)
	n := int64(failure.CauseLines)
	rc, err := c.LogSource.Log(ctx, pod.Namespace, pod.Name, podwatch.LogOptions{Container: f.Container, TailLines: &n, Previous: ok && status.RestartCount > f.Restart})
	if err != nil {
		return
	}
	defer rc.Close()
	var lines []string
	scanner := bufio.NewScanner(rc)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
	}
	if len(lines) >= len(f.Lines) {
		f.SetLines(lines)
	}
}

// preemptedBy reads the workload that Kueue's message says preempted the
// job: "Preempted to accommodate a workload (UID: 62b8..., JobUID: 845b...)
// due to prioritization in the ClusterQueue".
var preemptedBy = regexp.MustCompile(`^Preempted to accommodate a workload \(UID: ([^,)]+)(?:, JobUID: ([^)]*))?\)(.*)$`)

// namePreemptor says which workload preempted a job, where Kueue's message
// gives only its uid: its job's kind and name, the Workload and its
// priority. The message stays when the workload cannot be found.
func (c *Client) namePreemptor(ctx context.Context, s *Status) {
	m := preemptedBy.FindStringSubmatch(s.Message)
	if m == nil {
		return
	}
	// The Workloads of its job, by Kueue's label, when the message names
	// the job.
	selector := ""
	if m[2] != "" {
		selector = jobUIDLabel + "=" + m[2]
	}
	// Most often in the job's own namespace; else anywhere it may list.
	for _, namespace := range []string{s.Namespace, ""} {
		owned, err := c.workloads(ctx, namespace, selector)
		if err != nil {
			continue
		}
		for _, wl := range owned {
			if string(wl.UID) != m[1] {
				continue
			}
			by := fmt.Sprintf("Workload %s/%s", wl.Namespace, wl.Name)
			if len(wl.OwnerReferences) > 0 {
				owner := wl.OwnerReferences[0]
				by = fmt.Sprintf("%s %s/%s (%s", owner.Kind, wl.Namespace, owner.Name, by)
			} else {
				by += " ("
			}
			by += ", priority " + priorityOf(wl) + ")"
			s.Message = "preempted by " + by + m[3]
			return
		}
	}
}

// priorityOf says a Workload's priority: its class and value.
func priorityOf(wl *workload) string {
	value := "0"
	if wl.Spec.Priority != nil {
		value = strconv.Itoa(int(*wl.Spec.Priority))
	}
	class := wl.Spec.PriorityClassName
	if ref := wl.Spec.PriorityClassRef; ref != nil {
		class = ref.Name
	}
	if class == "" {
		return value
	}
	return class + " = " + value
}

// Kept is what was kept on this machine of the job's failed attempts.
func (c *Client) Kept(ctx context.Context, ref Ref) (failure.Story, error) {
	obj, err := c.get(ctx, ref)
	if err != nil || c.Keeper == nil {
		return failure.Story{}, err
	}
	return c.Keeper.Story(storyOf(c, obj))
}
