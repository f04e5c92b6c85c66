package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

// watched is a followed job, as the watch of its pods' failures asks it
// (podwatch.Job): its pods' places and attempts, as its follower last read
// it; the failures kept (Client.Keeper) and handed to notice; and the
// setup commands that failed, read from the start of the log of its pod of
// rank 0 as its training container starts, on the cluster that holds its
// pods.
type watched struct {
	client, pods *Client
	job          *reading
	notice       func(Noticed)
	// scanned are the containers whose logs are read for failed setup
	// commands; busy counts those reads under way.
	scanned map[string]bool
	busy    *atomic.Int64
}

func (w *watched) Member(pod *corev1.Pod) string { return memberOf(w.job.get(), pod) }

func (w *watched) Attempt() int { return attempt(w.job.get()) }

func (w *watched) Failed(attempt int, f failure.Failure) {
	w.notice(w.client.keep(w.job.get(), attempt, f))
}

func (w *watched) Changed(ctx context.Context, pod *corev1.Pod) {
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

// watchFailures notices the failures of a job's pods (as its follower last
// read it), on the cluster that holds them (on), until ctx ends, and the
// setup commands that failed there (podwatch.WatchFailures). It gives the
// mirror of the pods, which the follower reads them from; nil when they
// cannot be listed. busy counts the work under way, so that a follower may
// wait for it once the job has finished; moved is called at each change of
// the pods, once it is taken in.
func (c *Client) watchFailures(ctx context.Context, on *Client, job *reading, notice func(Noticed), busy *atomic.Int64, moved func()) *podwatch.Mirror {
	obj := job.get()
	k := kindOf(obj)
	return podwatch.WatchFailures(ctx, podwatch.Watch{
		Pods:     on.podObjects(obj.GetNamespace()),
		Opts:     metav1.ListOptions{LabelSelector: k.selector(obj.GetName())},
		Owns:     func(pod metav1.Object) bool { return k.owns(obj, pod) },
		Warnings: on.objects(events, obj.GetNamespace()),
		Logs:     on.LogSource,
		Busy:     busy,
		Moved:    moved,
	}, &watched{client: c, pods: on, job: job, notice: notice, scanned: map[string]bool{}, busy: busy})
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
