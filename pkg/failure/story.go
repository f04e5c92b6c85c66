package failure

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// Root is the failure of the attempt that likely caused the others: a
// preemption by Kueue when it is the latest failure (the job ran again
// after an earlier one); else the first to fail (failedAt) of those that
// are not consequences of another (a container stopped by SIGTERM, a
// process that lost its peer or timed out waiting for it, a pod deleted in
// an attempt Kueue preempted); else the first to fail.
func (a Attempt) Root() (Failure, bool) {
	if len(a.Failures) == 0 {
		return Failure{}, false
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
		return causes[len(causes)-1], true
	}
	for _, f := range causes {
		if f.Reason != Preempted {
			return f, true
		}
	}
	return failures[0], true
}

// Headline says the attempt in one line, its root cause first:
//
//	attempt 2 of 4 failed: rank 3 (worker-1, local rank 1) exited 1: ZeroDivisionError: division by zero
func (a Attempt) Headline() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d", a.Number)
	if a.Of > 0 {
		fmt.Fprintf(&b, " of %d", a.Of)
	}
	root, ok := a.Root()
	if !ok {
		return b.String() + ": nothing failed was seen"
	}
	if root.Reason == Preempted {
		b.WriteString(" was preempted: " + root.Message)
	} else {
		b.WriteString(" failed: " + root.String())
	}
	if after := a.after(root); after != "" {
		b.WriteString("; " + after)
	}
	if a.Of > 0 && a.Number >= a.Of && root.Reason != Preempted {
		b.WriteString("; no retries left")
	}
	return b.String()
}

// inTime are the failures in the order they failed (failedAt).
func inTime(failures []Failure) []Failure {
	out := slices.Clone(failures)
	slices.SortStableFunc(out, func(x, y Failure) int { return x.failedAt().Compare(y.failedAt()) })
	return out
}

// after says how the pods other than the root failure's failed, each by
// its first failure, counted by kind: the consequences of another's
// failure (Cause.Consequence), containers stopped by SIGTERM, and the
// other failures.
//
//	1,023 other pods failed after it: 1,020 NCCL timeouts, 3 lost peers
func (a Attempt) after(root Failure) string {
	seen := map[string]bool{root.Pod: true}
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
	text := fmt.Sprintf("%s other %s failed after it", thousands(n), plural(n, "pod", "pods"))
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
// root causes of other attempts kept failed on it too, that the node may be
// at fault, and how to keep the job off it; unless every one of them was
// the same error of the program, which is then more likely the program's.
// "" when the node is not known.
//
//	gpu-node-7, where attempts 1 and 2 failed first: the node may be at fault; keep the job off it (hostIgnoreList: [gpu-node-7] in its settings) and tell your platform team, whose node health checks can take it out
//	gpu-node-7, where attempts 1 and 2 failed first, with the same error: more likely the program's than the node's
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
	same := root.Cause.Error != ""
	for _, other := range s.Attempts {
		if r, ok := other.Root(); ok && r.Node == root.Node {
			there = append(there, strconv.Itoa(other.Number))
			same = same && r.Cause.Error == root.Cause.Error
		}
	}
	if len(there) < 2 {
		return root.Node
	}
	text := fmt.Sprintf("%s, where attempts %s and %s failed first", root.Node, strings.Join(there[:len(there)-1], ", "), there[len(there)-1])
	if same {
		return text + ", with the same error: more likely the program's than the node's"
	}
	return fmt.Sprintf("%s: the node may be at fault; keep the job off it (hostIgnoreList: [%s] in its settings) and tell your platform team, whose node health checks can take it out",
		text, root.Node)
}
