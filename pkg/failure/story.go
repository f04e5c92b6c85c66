package failure

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Attempt is one run of a job: the first, or one after a retry (an
// AppWrapper's reset, a JobSet's restart), and what failed in it.
type Attempt struct {
	// Number is 1 for the first run, 2 after the first retry.
	Number int `json:"number"`
	// Of is how many runs the job may make (an AppWrapper's retryLimit + 1);
	// 0 when not known.
	Of       int       `json:"of,omitempty"`
	Failures []Failure `json:"failures"`
	// Cut says that more failed than are kept (maxFailures): those that
	// failed last are left out.
	Cut bool `json:"cut,omitempty"`
}

// Story is what was kept of a job's failed attempts, the first first.
type Story struct {
	Attempts []Attempt `json:"attempts"`
}

// Attempt is the attempt of that number; false when none was kept.
func (s Story) Attempt(n int) (Attempt, bool) {
	for _, a := range s.Attempts {
		if a.Number == n {
			return a, true
		}
	}
	return Attempt{}, false
}

// Root is the failure of the attempt that likely caused the others: the
// first of its roots.
func (a Attempt) Root() (Failure, bool) {
	roots := a.roots()
	if len(roots) == 0 {
		return Failure{}, false
	}
	return roots[0], true
}

// roots are the failures of the attempt that likely caused the others: a
// preemption by Kueue when it is the latest failure (the job ran again
// after an earlier one); else the first to fail (failedAt) of those that
// are not consequences of another (a container stopped by SIGTERM, a
// process that lost its peer or timed out waiting for it, a pod deleted in
// an attempt Kueue preempted), with those of other pods that failed at
// once with it, which no clock orders (atOnce); else the first to fail.
func (a Attempt) roots() []Failure {
	if len(a.Failures) == 0 {
		return nil
	}
	failures := inTime(a.Failures)
	preempted := slices.ContainsFunc(failures, func(f Failure) bool { return f.Reason == Preempted })
	var causes []Failure
	for _, f := range failures {
		if !f.consequence() && !(preempted && f.Deletion != "") {
			causes = append(causes, f)
		}
	}
	if len(causes) > 0 && causes[len(causes)-1].Reason == Preempted {
		return causes[len(causes)-1:]
	}
	causes = slices.DeleteFunc(causes, func(f Failure) bool { return f.Reason == Preempted })
	if len(causes) == 0 {
		return failures[:1]
	}
	roots := []Failure{causes[0]}
	for _, f := range causes[1:] {
		if atOnce(causes[0], f) && !slices.ContainsFunc(roots, func(r Failure) bool { return r.Pod == f.Pod }) {
			roots = append(roots, f)
		}
	}
	return roots
}

// HasCause tells whether the failures of the attempt hold its root cause:
// one that is no consequence of another's failure. While they do not (a
// lost peer alone), the pod whose own failure caused them may still say
// it (CauseGrace).
func (a Attempt) HasCause() bool {
	root, ok := a.Root()
	return ok && !root.consequence()
}

// CauseGrace is how long a follower of a job, and run --local, wait for
// the failures of an attempt's other pods once one failed, and no more: the
// pod whose rank failed first may end after the pods that lost it, as its
// torchrun notices the failure (torch 1.13 looks at its processes every
// 5 s, its --monitor_interval) and stops its other processes.
const CauseGrace = 10 * time.Second

// Headline says the attempt in one line, its root cause first (Why):
//
//	attempt 2 of 4 failed: rank 3 (worker-1, local rank 1) exited 1: ZeroDivisionError: division by zero
func (a Attempt) Headline() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d", a.Number)
	if a.Of > 0 {
		fmt.Fprintf(&b, " of %d", a.Of)
	}
	roots := a.roots()
	switch {
	case len(roots) == 0:
		return b.String() + ": nothing failed was seen"
	case roots[0].Reason == Preempted:
		b.WriteString(" was preempted: " + roots[0].Message)
		if after := a.after(roots); after != "" {
			b.WriteString("; " + after)
		}
	case roots[0].Reason == Refused:
		// Its pods never ran: nothing of them failed.
		b.WriteString(": " + a.Why())
	default:
		b.WriteString(" failed: " + a.Why())
	}
	if a.Of > 0 && a.Number >= a.Of && roots[0].Reason != Preempted {
		b.WriteString("; no retries left")
	}
	return b.String()
}

// Why says what failed in the attempt: its root cause, or the pods that
// failed at once with it, then how the others failed after; "" when
// nothing failed.
//
//	rank 2 (master-0, local rank 2) exited 3 (and 3 other processes); 1 other pod failed after it: 1 lost peer
//	2 pods failed at once: rank 2 (master-0, local rank 2) exited 3; and rank 5 (worker-0, local rank 1) exited 1: ValueError: bad batch
func (a Attempt) Why() string {
	roots := a.roots()
	var text string
	switch len(roots) {
	case 0:
		return ""
	case 1:
		text = roots[0].String()
	case 2:
		text = fmt.Sprintf("2 pods failed at once: %s; and %s", roots[0], roots[1])
	default:
		text = fmt.Sprintf("%s pods failed at once: %s; %s; and %s more", thousands(len(roots)), roots[0], roots[1], thousands(len(roots)-2))
	}
	if after := a.after(roots); after != "" {
		text += "; " + after
	}
	return text
}

// atOnce tells whether two failures failed at once, as far as their times
// tell (failedAt): torchrun gives its time of a failure, and the kubelet a
// container's end, in whole seconds, so such a time is anywhere in its
// second; run --local's times of a process's end are exact.
func atOnce(x, y Failure) bool {
	span := func(t time.Time) (time.Time, time.Time) {
		if t.Equal(t.Truncate(time.Second)) {
			return t, t.Add(time.Second)
		}
		return t, t
	}
	x0, x1 := span(x.failedAt())
	y0, y1 := span(y.failedAt())
	return x0.Equal(y0) || x0.Before(y1) && y0.Before(x1)
}

// inTime are the failures in the order they failed (failedAt), those of
// one time by pod, container and key, so that the order does not depend on
// the order in which they were seen.
func inTime(failures []Failure) []Failure {
	out := slices.Clone(failures)
	slices.SortStableFunc(out, func(x, y Failure) int {
		return cmp.Or(x.failedAt().Compare(y.failedAt()), cmp.Compare(x.Pod, y.Pod), cmp.Compare(x.Container, y.Container), cmp.Compare(x.Key, y.Key))
	})
	return out
}

// after says how the pods other than the roots' failed, each by its first
// failure, counted by kind: the consequences of another's failure
// (Cause.Consequence), containers stopped by SIGTERM, and the other
// failures.
//
//	1,023 other pods failed after it: 1,020 NCCL timeouts, 3 lost peers
func (a Attempt) after(roots []Failure) string {
	seen := map[string]bool{}
	for _, r := range roots {
		seen[r.Pod] = true
	}
	counts := map[string]int{}
	n := 0
	for _, f := range inTime(a.Failures) {
		if f.Pod == "" || seen[f.Pod] {
			continue
		}
		seen[f.Pod] = true
		n++
		switch {
		case f.Cause.Consequence != "":
			counts[f.Cause.Consequence]++
		case f.Signal == "SIGTERM":
			counts[stoppedKind.one]++
		default:
			counts[otherKind.one]++
		}
	}
	if n == 0 {
		return ""
	}
	text := fmt.Sprintf("%s other %s failed after %s", thousands(n), plural(n, "pod", "pods"), plural(len(roots), "it", "them"))
	if a.Cut {
		text = "at least " + text
	}
	if counts[otherKind.one] == n {
		return text
	}
	var kinds []string
	for _, k := range append(consequences, stoppedKind, otherKind) {
		if c := counts[k.one]; c > 0 {
			kinds = append(kinds, thousands(c)+" "+plural(c, k.one, k.many))
		}
	}
	return text + ": " + strings.Join(kinds, ", ")
}

// The kinds of failure after the root cause besides its consequences.
var (
	stoppedKind = kind{one: "stopped by SIGTERM", many: "stopped by SIGTERM"}
	otherKind   = kind{one: "other failure", many: "other failures"}
)

// thousands writes a count with its thousands apart: 1,023.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Tell says a failure as a follower notices it: a line of what failed in
// which attempt, then the lines of its log that say why.
//
//	attempt 1 of 2: rank 1 (worker-0, local rank 1) exited 1: ZeroDivisionError: division by zero
//	  | Traceback (most recent call last):
//	  |   File "/app/train.py", line 9, in <module>
//	  | ZeroDivisionError: division by zero
func Tell(number, of int, f Failure) string {
	var b strings.Builder
	b.WriteString(attemptOf(number, of) + f.String())
	for _, line := range f.Excerpt() {
		b.WriteString("\n  | " + line)
	}
	return b.String()
}

// TellMore says that more pods fail in an attempt than are told one by
// one, as a follower says it once, after the first few.
//
//	attempt 1 of 4: more pods fail; what each shows is kept: generator status tells the root cause, generator logs --attempt 1 their last lines
func TellMore(number, of int) string {
	return attemptOf(number, of) + fmt.Sprintf("more pods fail; what each shows is kept: generator status tells the root cause, generator logs --attempt %d their last lines", number)
}

// attemptOf begins a line about an attempt: "attempt 2 of 4: ".
func attemptOf(number, of int) string {
	if of > 0 {
		return fmt.Sprintf("attempt %d of %d: ", number, of)
	}
	return fmt.Sprintf("attempt %d: ", number)
}

// Tell says a setup command that failed as a follower notices it, in which
// attempt.
//
//	attempt 1 of 2: master-0: setup command "cd /data" failed: sh: 2: cd: can't cd to /data; the launch went on (...)
func (e SetupError) Tell(number, of int) string { return attemptOf(number, of) + e.String() }

// excerptLines is how many lines of a traceback Excerpt keeps: its first,
// and the last ones, which name the error and where it was raised.
const excerptLines = 8

// Excerpt is what matters of the failure's lines: the traceback of the
// program's error (of its process's lines, where they are prefixed), the
// shell's line, torchrun's error; none when torchrun's summary said all
// there is (a rank's exit code, which the failure's line says); else the
// last few.
func (f Failure) Excerpt() []string {
	c := f.Cause
	var out []string
	if c.Shell != "" {
		out = append(out, c.Shell)
	}
	switch block := f.traceback(); {
	case len(block) > 0:
		if len(block) > excerptLines {
			block = append([]string{block[0], "..."}, block[len(block)-excerptLines+2:]...)
		}
		out = append(out, block...)
	case c.Torchrun != "":
		out = append(out, c.Torchrun)
	case c.Shell == "" && c.Rank == nil:
		out = append(out, f.Lines[max(0, len(f.Lines)-5):]...)
	}
	return out
}

// traceback is the traceback of the failure's error, as its lines have it:
// those of the error's process from its start to the error's line; the
// error's line alone without one; none when the lines do not have it.
func (f Failure) traceback() []string {
	c := f.Cause
	if c.Error == "" {
		return nil
	}
	rank := &summaryEntry{rank: c.Rank, localRank: c.LocalRank}
	end := slices.IndexFunc(f.Lines, func(l string) bool {
		p, text := whose(l)
		return strings.HasSuffix(strings.TrimSpace(text), c.Error) && (p.key() == "" || p.of(rank))
	})
	if end < 0 {
		return nil
	}
	own, _ := whose(f.Lines[end])
	var block []string
	for i := end; i >= 0; i-- {
		if p, _ := whose(f.Lines[i]); p.key() != own.key() {
			continue
		}
		block = append(block, f.Lines[i])
		if strings.HasSuffix(f.Lines[i], "Traceback (most recent call last):") {
			slices.Reverse(block)
			return block
		}
	}
	return block[:1]
}

// Node says the node the attempt's root cause failed on; and, when the
// root causes of other attempts kept failed on it too, and they differ (other
// ranks, other errors), that the node may be at fault, and how to keep the
// job off it: the same rank failing the same way is more likely the
// program's. "" when the node is not known.
//
//	gpu-node-7, where attempts 1 and 2 failed first: the node may be at fault; keep the job off it (hostIgnoreList: [gpu-node-7] in its settings) and tell your platform team, whose node health checks can take it out
//	gpu-node-7, where attempts 1 and 2 failed first, the same way each time: more likely the program's than the node's
func (s Story) Node(number int) string {
	a, ok := s.Attempt(number)
	if !ok {
		return ""
	}
	root, ok := a.Root()
	if !ok || root.Node == "" {
		return ""
	}
	var there []string
	same := true
	for _, other := range s.Attempts {
		if r, ok := other.Root(); ok && r.Node == root.Node {
			there = append(there, strconv.Itoa(other.Number))
			same = same && sameWay(r, root)
		}
	}
	if len(there) < 2 {
		return root.Node
	}
	text := fmt.Sprintf("%s, where attempts %s and %s failed first", root.Node, strings.Join(there[:len(there)-1], ", "), there[len(there)-1])
	if same {
		return text + ", the same way each time: more likely the program's than the node's"
	}
	return fmt.Sprintf("%s: the node may be at fault; keep the job off it (hostIgnoreList: [%s] in its settings) and tell your platform team, whose node health checks can take it out",
		text, root.Node)
}

// sameWay tells whether two failures are of the same rank (or pod and
// container) ending the same way: its reason and exit code or signal,
// and its error where both have one. An error that one says and the other
// does not is no difference: lines may be cut, or not kept.
func sameWay(x, y Failure) bool {
	ending := func(f Failure) string {
		if f.ExitCode == nil {
			return f.Reason
		}
		return f.Reason + ": " + ended(f, f.Cause)
	}
	return x.Who() == y.Who() && ending(x) == ending(y) && (x.Cause.Error == "" || y.Cause.Error == "" || x.Cause.Error == y.Cause.Error)
}
