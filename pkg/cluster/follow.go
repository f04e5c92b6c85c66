package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
	"github.com/torchwrap/generator/pkg/failure"
)

// DefaultOutage is how long a follower keeps following a job through a
// cluster that cannot be reached, unless Client.Outage says otherwise: a
// control plane's upgrade, an API server's rollout, a VPN that drops or a
// laptop that sleeps outlast seconds, and a job of days goes on meanwhile.
const DefaultOutage = 15 * time.Minute

// finishGaps is how many times the least time between two readings
// (Client.gap) a follower of logs waits, once the job has finished, for a
// container still running (a sidecar, a pod its controller did not stop)
// before it leaves its log: 10 s.
const finishGaps = 20

// queuedEvery is how often a follower reads a queued job again when
// nothing it watches changes: its place in its LocalQueue (Kueue's
// visibility API), and why a MultiKueue worker waits, which no watch
// tells.
const queuedEvery = time.Minute

// noticeGrace is how long a follower of a job that failed waits for the
// failure of its last attempt, which the watch of its pods may not have
// told yet: the reading that saw the job fail can come first.
const noticeGrace = 2 * time.Second

// Follow reads the job's status until it has finished (Succeeded or Failed),
// the API server refuses its pods for good (Status.Refusal), or ctx ends,
// and reports each reading. It reads it again when what it
// watches of it changes (noticing.next), not on a timer. It gives the last
// status; the error is ctx's when ctx ended first. Meanwhile it notices the
// job's failures (noticing). report and notice are called in turn, never
// at once.
func (c *Client) Follow(ctx context.Context, ref Ref, report func(Status), notice func(Noticed)) (Status, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := c.noticing(ctx, ref, notice)
	var last Status
	for {
		if err := n.next(ctx); err != nil {
			return last, err
		}
		s, obj, err := n.reading(ctx)
		switch {
		case ctx.Err() != nil:
			return last, ctx.Err()
		case errors.As(err, &NotFound{}):
			return last, fmt.Errorf("the %s was deleted while it was followed", ref)
		case n.lost(err):
		case err != nil:
			return last, err
		default:
			if err := n.read(ctx, &s, obj); err != nil {
				return last, err
			}
			last = s
			report(s)
			if s.State.Finished() || s.Refusal != nil {
				return s, nil
			}
		}
	}
}

// Lost, among what a follower notices, says that the cluster cannot be
// reached (Err) since Since, and that the follower goes on trying until
// Until; or with Back, that it answers again.
type Lost struct {
	Server       string
	Since, Until time.Time
	Err          error
	Back         bool
}

// lost takes in the error of a reading: when it is that the cluster cannot
// be reached, it says so once (Noticed.Lost), and tells whether the
// follower goes on trying (while Client.Outage has not passed since the
// first such reading): the watch of the job lists it again and again
// meanwhile, and wakes the follower each time. Any other error ends an
// outage, as an answer.
func (n *noticing) lost(err error) bool {
	var unreachable Unreachable
	if !errors.As(err, &unreachable) {
		if !n.since.IsZero() {
			n.notice(Noticed{Lost: &Lost{Server: n.client.Server, Since: n.since, Back: true}})
			n.since = time.Time{}
		}
		return false
	}
	if n.since.IsZero() {
		n.since = time.Now()
		n.notice(Noticed{Lost: &Lost{Server: n.client.Server, Since: n.since, Until: n.since.Add(n.client.outage()), Err: cause(unreachable)}})
	}
	return time.Since(n.since) < n.client.outage()
}

// noticing is what a follower of a job (Follow, Logs) watches of it, and
// what it notices of its failures: those the watch of its pods tells as
// they happen (watchFailures), and a preemption by Kueue as a reading shows
// it; after a failure the AppWrapper controller deletes the pods, and their
// logs and exit codes with them. A failed job whose pods are gone is told
// by the root cause of the failures noticed in its last attempt.
type noticing struct {
	client *Client
	ref    Ref
	notice func(Noticed)
	// sight watches the job and its Workload; copies the job's copy on
	// each MultiKueue worker cluster that held its pods. Their changes,
	// and those of the pods, poke wake; read is when the job was read
	// last, and uid the job's uid then (another is another job of the
	// same name).
	sight  *sight
	copies map[*Client]*sight
	wake   chan struct{}
	last   time.Time
	uid    types.UID
	// queued: the job was queued when read last.
	queued bool
	// noticed has the watch's failures; job is the job as last read, which
	// the watch reads too (nil until the first reading).
	noticed chan Noticed
	job     *reading
	// watching is the cluster whose pods are watched, pods their mirror
	// (nil when they could not be listed), and unwatch ends that watch: a
	// MultiKueue manager's job is watched on the manager until it is
	// dispatched, then on its worker.
	watching *Client
	pods     *podwatch.Mirror
	unwatch  context.CancelFunc
	// latest is the last attempt that failures were noticed in; seen the
	// first failure a reading showed, for when none was noticed.
	latest      failure.Attempt
	seen        *failure.Failure
	preemptions map[string]bool
	// told counts the failures of each attempt handed on.
	told map[int]int
	// since is when the cluster could not be reached; zero while it
	// answers.
	since time.Time
	// busy counts the watch's work under way: the changes it has not taken
	// in yet, and its reads of logs for failed setup commands.
	busy atomic.Int64
}

// noticing starts watching the job ref, until ctx ends, for a follower
// that notice tells what it notices.
func (c *Client) noticing(ctx context.Context, ref Ref, notice func(Noticed)) *noticing {
	n := &noticing{client: c, ref: ref, notice: notice, noticed: make(chan Noticed), preemptions: map[string]bool{}, told: map[int]int{},
		copies: map[*Client]*sight{}, wake: make(chan struct{}, 1)}
	n.sight = c.sight(ctx, ref, n.poke)
	return n
}

// poke says that something the follower watches changed: the next reading
// comes soon (next).
func (n *noticing) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// next waits until the follower reads the job again: when something it
// watches changes (the job, its Workload, its pods, the cluster's answer),
// when a log may be read again (Logs), and while the job is queued, once
// a minute at least (queuedEvery); never sooner than the least time
// between two readings (Client.gap) after the last, so that a burst of
// changes is read at once. It notices meanwhile; the error is ctx's when
// ctx ended first.
func (n *noticing) next(ctx context.Context) error {
	if !n.last.IsZero() {
		if err := n.wait(ctx, time.Until(n.last.Add(n.client.gap()))); err != nil {
			return err
		}
	}
	var again <-chan time.Time
	if n.queued {
		again = time.After(time.Until(n.last.Add(queuedEvery)))
	}
	if err := n.until(ctx, n.wake, again); err != nil {
		return err
	}
	n.last = time.Now()
	return nil
}

// reading is the picture of the job from what the follower watches (as
// Status reads it, without its events): the job and its Workload, its
// pods where they are; and the job. The error is the watch's while the
// cluster does not answer, NotFound once the job is gone or another of
// its name has come.
func (n *noticing) reading(ctx context.Context) (Status, *unstructured.Unstructured, error) {
	obj, wl, err := n.watched(ctx)
	if obj == nil {
		return Status{}, nil, err
	}
	s, _, _, err := n.client.read(ctx, obj, wl, err, n)
	return s, obj, err
}

// watched is the job and its Workload as the follower watches them: the
// error is the watch's while the cluster does not answer (no job then),
// NotFound once the job is gone or another of its name has come (no job
// either); or why its Workload could not be read (the job, without it).
func (n *noticing) watched(ctx context.Context) (*unstructured.Unstructured, *workload, error) {
	obj, err := n.sight.object(ctx)
	if err != nil {
		return nil, nil, err
	}
	if n.uid == "" {
		n.uid = obj.GetUID()
	}
	if obj.GetUID() != n.uid {
		return nil, nil, NotFound{Ref: n.ref}
	}
	wl, err := n.sight.workloadOf(ctx, obj)
	return obj, wl, err
}

// read takes in a reading of the job, s its status. When the job has
// failed, it waits a while for the failures of its last attempt, which the
// watch may not have told yet, and for their cause (awaitCause), and s
// says their root cause. The error is ctx's when ctx ended first.
func (n *noticing) read(ctx context.Context, s *Status, obj *unstructured.Unstructured) error {
	n.queued = s.State == Queued
	n.set(obj)
	if f, ok := preemption(*s); ok && !n.preemptions[f.Key] {
		n.preemptions[f.Key] = true
		n.add(n.client.keepOf(ctx, n.ref, int(s.Retries)+1, f))
	}
	if s.State == Failed {
		if err := n.awaitCause(ctx, attempt(obj)); err != nil {
			return err
		}
	}
	if s.State.Finished() {
		if err := n.settle(ctx); err != nil {
			return err
		}
	}
	n.refused(s, obj)
	if n.seen == nil {
		n.seen = s.Failure
	}
	// A failed job is told by the root cause of the failures noticed in
	// its last attempt, which a reading's pods may show only in part.
	if root, ok := n.latest.Root(); s.State == Failed && ok && (s.Failure == nil || n.latest.Number == attempt(obj)) {
		s.Failure = &root
	} else if s.State == Failed && s.Failure == nil {
		s.Failure = n.seen
	}
	return nil
}

// awaitCause waits, noticing meanwhile, for the failures of the job's last
// attempt (number) once the job has failed: noticeGrace for the first,
// which the watch may not have told yet when the reading that saw the job
// fail comes; then, while those noticed are only consequences of another's
// failure (a lost peer), failure.CauseGrace for the pod whose own failure
// caused them, which may end after them. The error is ctx's when ctx ended
// first.
func (n *noticing) awaitCause(ctx context.Context, number int) error {
	first, cause := time.After(noticeGrace), time.After(failure.CauseGrace)
	for n.latest.Number < number || !n.latest.HasCause() {
		if n.latest.Number >= number {
			first = nil
		}
		select {
		case x := <-n.noticed:
			n.add(x)
		case <-first:
			return nil
		case <-cause:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// set keeps the job as last read, which the watch of its pods reads too.
func (n *noticing) set(obj *unstructured.Unstructured) {
	if n.job == nil {
		n.job = &reading{}
	}
	n.job.set(obj)
}

// podsOf reads the pods of the job obj on the cluster on (the one that
// holds them), from the mirror of the watch of their failures: the first
// reading opens it there, until ctx ends, and a reading that finds them on
// another cluster moves it there. Without a follower (n nil), or when they
// cannot be listed, it lists them.
func (n *noticing) podsOf(ctx context.Context, on *Client, obj *unstructured.Unstructured) ([]corev1.Pod, error) {
	if n == nil {
		return on.podsOf(ctx, obj)
	}
	n.set(obj)
	if on != n.watching {
		if n.unwatch != nil {
			n.unwatch()
		}
		var watching context.Context
		watching, n.unwatch = context.WithCancel(ctx)
		n.watching = on
		n.pods = n.client.watchFailures(watching, on, n.job, func(x Noticed) {
			select {
			case n.noticed <- x:
			case <-ctx.Done():
			}
		}, &n.busy, n.poke)
	}
	if n.pods == nil {
		return on.podsOf(ctx, obj)
	}
	objects, synced := n.pods.Now(ctx)
	if !synced {
		return on.podsOf(ctx, obj)
	}
	return podwatch.PodsIn(objects), nil
}

// settle waits a while (noticeGrace) for the watch's work under way to
// end (the changes it has not taken in, the reads of setup commands),
// noticing meanwhile: a job that ends soon after its setup is not left
// before they are told. The error is ctx's when ctx
// ended first.
func (n *noticing) settle(ctx context.Context) error {
	grace := time.After(noticeGrace)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n.busy.Load() > 0 {
		select {
		case x := <-n.noticed:
			n.add(x)
		case <-tick.C:
		case <-grace:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// wait waits d, noticing meanwhile; the error is ctx's when ctx ended
// first.
func (n *noticing) wait(ctx context.Context, d time.Duration) error {
	return n.until(ctx, nil, time.After(d))
}

// until waits until woken or the time comes (either nil: never), noticing
// meanwhile; the error is ctx's when ctx ended first.
func (n *noticing) until(ctx context.Context, woken <-chan struct{}, at <-chan time.Time) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case x := <-n.noticed:
			n.add(x)
		case <-woken:
			return nil
		case <-at:
			return nil
		}
	}
}

// add takes in what the watch noticed, and hands it on: each failed setup
// command, and the first failures of each attempt (as many as are kept
// with their lines); the first failure after them is handed on as More,
// and the others not at all: when a thousand pods fail at once, a few say
// why and the rest are kept.
func (n *noticing) add(x Noticed) {
	if x.Setup != nil {
		n.notice(x)
		return
	}
	if x.Attempt > n.latest.Number {
		n.latest = failure.Attempt{Number: x.Attempt}
	}
	if x.Attempt == n.latest.Number {
		n.latest.Failures = append(n.latest.Failures, x.Failure)
	}
	n.told[x.Attempt]++
	switch told := n.told[x.Attempt]; {
	case told == failure.WithLines+1:
		x.More = true
	case told > failure.WithLines:
		return
	}
	n.notice(x)
}

// preemption is the failure of a job that Kueue preempted, as its status
// says while it waits to be admitted again.
func preemption(s Status) (failure.Failure, bool) {
	if s.State != Queued || s.Reason != failure.Preempted {
		return failure.Failure{}, false
	}
	return failure.Failure{Key: "preempted/" + s.Workload + "/" + s.Message, Reason: failure.Preempted, Message: s.Message, At: time.Now()}, true
}

// keepOf keeps a failure of the job, read anew.
func (c *Client) keepOf(ctx context.Context, ref Ref, attempt int, f failure.Failure) Noticed {
	obj, err := c.get(ctx, ref)
	if err != nil {
		return Noticed{Attempt: attempt, Failure: f, NotKept: err}
	}
	return c.keep(obj, attempt, f)
}
