package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/torchwrap/generator/pkg/failure"
)

// followMisses is how many readings in a row Follow lets the cluster miss
// before it gives up: a long job outlives short outages.
const followMisses = 5

// noticeGrace is how long a follower of a job that failed waits for the
// failure of its last attempt, which the watch of its pods may not have
// told yet: the reading that saw the job fail can come first.
const noticeGrace = 2 * time.Second

// Follow reads the job's status until it has finished (Succeeded or Failed)
// or ctx ends, and reports each reading. It gives the last status; the
// error is ctx's when ctx ended first. Meanwhile it watches the job's pods,
// and notices each failure as it happens (watchFailures), and a preemption
// by Kueue: after a failure the AppWrapper controller deletes the pods,
// and their logs and exit codes with them. A failed job whose pods are gone
// is told by the root cause of the failures noticed in its last attempt.
// report and notice are called in turn, never at once.
func (c *Client) Follow(ctx context.Context, ref Ref, report func(Status), notice func(Noticed)) (Status, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	noticed := make(chan Noticed)
	var job *reading
	var last Status
	// latest is the last attempt that failures were noticed in; seen the
	// first failure a reading showed, for when none was noticed.
	var latest failure.Attempt
	var seen *failure.Failure
	preemptions := map[string]bool{}
	add := func(n Noticed) {
		if n.Attempt > latest.Number {
			latest = failure.Attempt{Number: n.Attempt}
		}
		if n.Attempt == latest.Number {
			latest.Failures = append(latest.Failures, n.Failure)
		}
		notice(n)
	}
	misses := 0
	for {
		s, obj, err := c.reading(ctx, ref)
		var unreachable Unreachable
		switch {
		case ctx.Err() != nil:
			return last, ctx.Err()
		case errors.As(err, &NotFound{}):
			return last, fmt.Errorf("the %s was deleted while it was followed", ref)
		case errors.As(err, &unreachable) && misses < followMisses:
			misses++
		case err != nil:
			return last, err
		default:
			misses = 0
			if job == nil {
				job = &reading{obj: obj}
				go c.watchFailures(ctx, job, func(n Noticed) {
					select {
					case noticed <- n:
					case <-ctx.Done():
					}
				})
			}
			job.set(obj)
			if f, ok := preemption(s); ok && !preemptions[f.Key] {
				preemptions[f.Key] = true
				add(c.keepOf(ctx, ref, int(s.Retries)+1, f))
			}
			if s.State == Failed {
				// The watch may still be reading the last failure's lines.
				grace := time.After(noticeGrace)
			noticing:
				for latest.Number < attempt(obj) {
					select {
					case n := <-noticed:
						add(n)
					case <-grace:
						break noticing
					case <-ctx.Done():
						return last, ctx.Err()
					}
				}
			}
			if seen == nil {
				seen = s.Failure
			}
			if s.State == Failed && s.Failure == nil {
				s.Failure = seen
				if root, ok := latest.Root(); ok {
					s.Failure = &root
				}
			}
			last = s
			report(s)
			if s.State.Finished() {
				return s, nil
			}
		}
		wait := time.After(c.every())
	waiting:
		for {
			select {
			case <-ctx.Done():
				return last, ctx.Err()
			case n := <-noticed:
				add(n)
			case <-wait:
				break waiting
			}
		}
	}
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
