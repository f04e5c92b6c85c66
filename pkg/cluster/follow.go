package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// followMisses is how many readings in a row Follow lets the cluster miss
// before it gives up: a long job outlives short outages.
const followMisses = 5

// Follow reads the job's status until it has finished (Succeeded or Failed)
// or ctx ends, and reports each reading. It gives the last status; the
// error is ctx's when ctx ended first. It remembers a failed pod seen along
// the way: after a failure the AppWrapper controller may delete the pods,
// and their exit codes with them.
func (c *Client) Follow(ctx context.Context, ref Ref, report func(Status)) (Status, error) {
	var last Status
	var failed *FailedPod
	misses := 0
	for {
		s, err := c.Status(ctx, ref)
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
			if s.FailedPod != nil {
				failed = s.FailedPod
			} else if s.State == Failed {
				s.FailedPod = failed
			}
			last = s
			report(s)
			if s.State.Finished() {
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(c.every()):
		}
	}
}
