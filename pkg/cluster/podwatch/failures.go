package podwatch

import (
	"bufio"
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/torchwrap/generator/pkg/failure"
)

// Job is the job whose pods a failure watch watches, as the cluster
// package knows it (it knows the kinds of job), as its follower last read
// it. Its methods are called from the watch's one goroutine.
type Job interface {
	// Member is a pod's place in the job (worker-1); "" when not known.
	Member(pod *corev1.Pod) string
	// Attempt is the attempt the job is in: a pod's failures are of the
	// attempt it was in when the first of them was noticed.
	Attempt() int
	// Failed keeps a failure of a pod, of that attempt, and hands it on.
	Failed(attempt int, f failure.Failure)
	// Changed takes in a pod as it changes, after its failures: the job
	// reads the start of its training container's log there for the
	// setup commands that failed.
	Changed(ctx context.Context, pod *corev1.Pod)
	// Refusal reads the refusal of the job's pods that a Warning event of
	// another object says (its controller's, which the API server refused
	// to create them); false for any other event.
	Refusal(e *corev1.Event) (failure.Failure, bool)
}

// Watch is where a failure watch reads: the job's pods (listed with opts,
// those Owns keeps), the Warning events of their namespace, and the logs
// of their containers. Busy counts the work under way: the changes listed
// or watched and not yet taken in, and what Job does with them. Moved,
// when not nil, is called once each change of the pods (a pod listed,
// changed or deleted) is taken in, its failures handed on first: the
// follower reads the job again.
type Watch struct {
	Pods     ListWatch
	Opts     metav1.ListOptions
	Owns     func(metav1.Object) bool
	Warnings ListWatch
	Logs     LogSource
	Busy     *atomic.Int64
	Moved    func()
}

// failures notices the failures of a job's pods while it is followed, each
// once: it reads a failed container's last lines while its pod is there
// (the AppWrapper controller deletes the pods of a failed attempt), and
// hands the failure to its job.
type failures struct {
	job   Job
	watch Watch
	// pods and warnings mirror the job's pods and the Warning events of
	// its namespace, and hand their changes to podChanges and
	// warningChanges.
	pods, warnings             *Mirror
	podChanges, warningChanges chan Change
	// seen are the job's pods seen, by uid; attempts the attempt each pod
	// failed in; noticed the keys of the failures noticed.
	seen     map[types.UID]*corev1.Pod
	attempts map[types.UID]int
	noticed  map[string]bool
	// read counts the failures of each attempt whose log's last lines
	// were read: when many pods fail at once, the first few say why.
	read map[int]int
	// listed: the pods' first list has been taken in (WatchFailures
	// holds it before it returns, so its pods are no news to Moved).
	listed bool
}

// WatchFailures mirrors the pods of a job and the Warning events about
// them, and then, until ctx ends, notices each failure they show, which it
// hands to job: the pods are listed before it returns, and watched from
// that list, so a pod that fails once the follower has read the job is
// seen, however soon it is deleted. It gives the mirror of the pods, which
// the follower reads them from; nil when they cannot be listed (not
// allowed, say), and then it notices nothing.
func WatchFailures(ctx context.Context, w Watch, job Job) *Mirror {
	f := &failures{job: job, watch: w, podChanges: make(chan Change, 64), warningChanges: make(chan Change, 64),
		seen: map[types.UID]*corev1.Pod{}, attempts: map[types.UID]int{}, noticed: map[string]bool{}, read: map[int]int{}}
	f.pods = NewMirror(w.Pods, w.Opts, w.Owns, f.podChanges, w.Busy)
	// Events are a help: the node controller says in them alone that a
	// pod's node stopped answering.
	f.warnings = NewMirror(w.Warnings, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning}, nil, f.warningChanges, w.Busy)
	// What the user may not read is not asked again.
	again := func(err error) bool { return !apierrors.IsForbidden(err) }
	if f.pods.Start(ctx, again) != nil {
		return nil
	}
	go f.warnings.Run(ctx, again)
	go f.run(ctx)
	return f.pods
}

func (f *failures) run(ctx context.Context) {
	busy := f.watch.Busy
	for {
		select {
		case <-ctx.Done():
			// What was handed on and will not be taken in is not under way.
			busy.Add(-int64(len(f.podChanges) + len(f.warningChanges)))
			return
		case c := <-f.podChanges:
			f.podChanged(ctx, c)
		case c := <-f.warningChanges:
			// A warning is about a pod: the pods' changes at hand are read
			// first, so that a pod told of by both is known by then.
		pending:
			for {
				select {
				case p := <-f.podChanges:
					f.podChanged(ctx, p)
				default:
					break pending
				}
			}
			f.warning(ctx, c)
			busy.Add(-1)
		}
	}
}

// warning takes in a change of the Warning events of the job's namespace.
func (f *failures) warning(ctx context.Context, c Change) {
	var e corev1.Event
	obj, ok := c.Obj.(*unstructured.Unstructured)
	if !ok || c.Deleted || runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &e) != nil {
		return
	}
	if e.InvolvedObject.Kind != "Pod" {
		f.refused(&e)
		return
	}
	pod, ours := f.seen[e.InvolvedObject.UID]
	if !ours {
		// Held, its change not taken in yet.
		held, ok := f.pods.ByName(e.InvolvedObject.Name)
		pod, ours = held.(*corev1.Pod)
		ours = ok && ours && pod.UID == e.InvolvedObject.UID
	}
	if !ours {
		return
	}
	if failed, ok := failure.FromEvent(&e, pod, f.job.Member(pod)); ok {
		f.add(ctx, pod, failed)
	}
}

// podChanged takes in a change of the job's pods: the failures a pod
// shows, then the pod itself, for its job; then says that the pods moved,
// once they were listed first.
func (f *failures) podChanged(ctx context.Context, c Change) {
	defer f.watch.Busy.Add(-1)
	if f.listed && f.watch.Moved != nil {
		defer f.watch.Moved()
	}
	if c.Obj == nil {
		f.listed = true
		return
	}
	pod, ok := c.Obj.(*corev1.Pod)
	if !ok || c.Deleted {
		return
	}
	f.seen[pod.UID] = pod
	for _, failed := range failure.FromPod(pod, f.job.Member(pod)) {
		f.add(ctx, pod, failed)
	}
	f.job.Changed(ctx, pod)
}

// add notices a failure of a pod, unless it was noticed already: with the
// last lines of its container's log, while they can be read, for the first
// few of its attempt.
func (f *failures) add(ctx context.Context, pod *corev1.Pod, failed failure.Failure) {
	if f.noticed[failed.Key] {
		return
	}
	f.noticed[failed.Key] = true
	if _, ok := f.attempts[pod.UID]; !ok {
		f.attempts[pod.UID] = f.job.Attempt()
	}
	number := f.attempts[pod.UID]
	if failed.ExitCode != nil && f.read[number] < failure.WithLines {
		f.read[number]++
		lastLines(ctx, f.watch.Logs, pod, &failed)
	}
	f.job.Failed(number, failed)
}

// lastLines reads the last lines of a failed container's log, while its
// pod is there: more than the termination message keeps (2 KiB at most),
// and there is none unless terminationMessagePolicy is
// FallbackToLogsOnError. The termination message stays when the log cannot
// be read.
func lastLines(ctx context.Context, source LogSource, pod *corev1.Pod, f *failure.Failure) {
	if source == nil {
		return
	}
	status, ok := ContainerStatus(pod, f.Container)
	n := int64(failure.CauseLines)
	rc, err := source.Log(ctx, pod.Namespace, pod.Name, LogOptions{Container: f.Container, TailLines: &n, Previous: ok && status.RestartCount > f.Restart})
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

// ContainerStatus is the status of a pod's container or init container of
// that name; false when it has none yet.
func ContainerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, c := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.ContainerStatus{}, false
}
