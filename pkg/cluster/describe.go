package cluster

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/torchwrap/generator/pkg/failure"
)

// Line writes the status as one line, for a live line or a log:
//
//	AppWrapper demo: Queued in LocalQueue team-a (position 2): Pending: couldn't assign flavors ...
//	AppWrapper demo: Running, pods ready 4/4
//	AppWrapper demo: Failed (3 retries): FoundFailedPods; master-0 (container pytorch) exited 1
func (s Status) Line() string {
	return fmt.Sprintf("%s %s: %s", s.Kind, s.Name, s.summary())
}

// summary is the line without the job's name: "Running, pods ready 4/4".
func (s Status) summary() string {
	var b strings.Builder
	b.WriteString(string(s.State))
	if s.Worker != nil && !s.State.Finished() {
		fmt.Fprintf(&b, " on worker cluster %s", s.Worker.Name)
	}
	if s.State == Queued && s.Queue != "" {
		fmt.Fprintf(&b, " in %s", s.queue())
	}
	if more := s.aside(); len(more) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(more, ", "))
	}
	switch {
	case s.Pods.Unread && (s.State == Admitted || s.State == Running):
		b.WriteString(", pods not read")
	case s.State == Admitted || s.State == Running:
		fmt.Fprintf(&b, ", pods ready %d/%d", s.Pods.Ready, s.Pods.Expected)
		if s.Pods.Succeeded > 0 {
			fmt.Fprintf(&b, " (%d succeeded)", s.Pods.Succeeded)
		}
	case s.State == Succeeded:
		if s.Pods.Succeeded > 0 {
			fmt.Fprintf(&b, ", pods succeeded %d/%d", s.Pods.Succeeded, s.Pods.Expected)
		}
	}
	refused := s.Failure != nil && s.Failure.Reason == failure.Refused
	if refused {
		// The cause, first: the job's own words only say its pods are not
		// there.
		b.WriteString(": " + s.Failure.String())
	}
	if why := s.why(); why != "" && refused {
		b.WriteString("; " + why)
	} else if why != "" {
		b.WriteString(": " + why)
	}
	for _, w := range s.Offered {
		if w.Waiting != "" {
			fmt.Fprintf(&b, "; on worker cluster %s: %s", w.Name, oneLine(w.Waiting))
		}
	}
	if s.Failure != nil && !refused {
		b.WriteString("; " + s.Failure.String())
	}
	if s.Pods.Problem != "" && (s.State == Admitted || s.State == Running) {
		b.WriteString("; " + oneLine(s.Pods.Problem))
	}
	return b.String()
}

// Lines writes the status as a few lines, one a subject, the root cause of
// a failed or retrying job first:
//
//	AppWrapper "demo" in namespace "ml": Failed (3 retries)
//	  cause:     attempt 4 of 4 failed: rank 3 (worker-1, local rank 1) exited 1: ZeroDivisionError: division by zero; no retries left
//	  node:      gpu-node-7
//	  before:    attempt 3 of 4 failed: worker-0 (container pytorch) ran out of memory (OOMKilled: ...)
//	  unseen:    attempts 1 and 2 failed unseen: ...
//	  why:       FoundFailedPods
//	  pods:      ready 0/2; 1 succeeded, 1 failed
//	  gpus:      16 nvidia.com/gpu
//	  queue:     LocalQueue team-a, ClusterQueue team-a-cq
//	  workload:  appwrapper-demo-7d9f2
func (s Status) Lines() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q in namespace %q: %s", s.Kind, s.Name, s.Namespace, s.State)
	if more := s.aside(); len(more) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(more, ", "))
	}
	b.WriteString("\n")
	line := func(label, text string) {
		if text != "" {
			fmt.Fprintf(&b, "  %-10s %s\n", label+":", text)
		}
	}
	// The lines of a failure's log that say why, below its line.
	excerpt := func(f failure.Failure) {
		for _, l := range f.Excerpt() {
			fmt.Fprintf(&b, "  %-10s | %s\n", "", l)
		}
	}
	latest, told := s.cause()
	if told > 0 {
		line("cause", latest.Headline())
		if root, ok := latest.Root(); ok {
			excerpt(root)
		}
		line("node", failure.Story{Attempts: s.Attempts}.Node(told))
	}
	for _, a := range s.Attempts {
		if a.Number != told {
			line("before", a.Headline())
		}
	}
	line("unseen", unseen(s.Unseen))
	line("why", s.why())
	if s.Failure != nil && told == 0 {
		line("failed", s.Failure.String())
		excerpt(*s.Failure)
	}
	line("pods", s.Pods.String())
	for _, e := range s.Setup {
		line("setup", e.String())
	}
	if s.Output != nil {
		line("output", s.Output.String(s.Name))
	}
	if s.GPUs > 0 {
		line("gpus", fmt.Sprintf("%d %s", s.GPUs, s.GPUResource))
	}
	if s.Workspace != nil {
		line("workspace", s.Workspace.Line())
	}
	line("problem", oneLine(s.Pods.Problem))
	var queue []string
	if s.Queue != "" {
		queue = append(queue, s.queue())
	}
	if s.ClusterQueue != "" {
		queue = append(queue, "ClusterQueue "+s.ClusterQueue)
	}
	line("queue", strings.Join(queue, ", "))
	line("workload", s.Workload)
	line("worker", s.Worker.String())
	for _, w := range s.Offered {
		line("offered", w.String())
	}
	for _, e := range s.unsaid(latest) {
		line("warning", Cut(e.String(), eventWidth))
	}
	for _, note := range s.Notes {
		line("not read", note)
	}
	return b.String()
}

// unsaid are the job's Warning events that the other lines do not say
// already, each message once: Kueue's pending reason (an event of its
// Workload too), a pod's problem (the scheduler's FailedScheduling, which
// says the same of each pod), the refusal of its pods (each pod's, by the
// object that creates them), the cause of the attempt told (latest).
func (s Status) unsaid(latest failure.Attempt) []Event {
	var told []string
	if s.Message != "" {
		told = append(told, oneLine(s.Message))
	}
	if s.Pods.Problem != "" {
		told = append(told, oneLine(s.Pods.Problem))
	}
	// The guards whose refusals of the pods the cause says: their words
	// differ from pod to pod (a worker's init container, which the master
	// has not).
	guards := map[string]bool{}
	for _, f := range latest.Failures {
		if f.Reason == failure.Refused {
			guards[f.Guard] = true
		}
	}
	if s.Failure != nil {
		told = append(told, s.Failure.String())
		if s.Failure.Reason == failure.Refused {
			guards[s.Failure.Guard] = true
		}
	}
	var out []Event
	said := map[string]bool{}
	for _, e := range s.Warnings {
		words := e.Reason + ": " + failure.Words(e.Message)
		refusal, refused := failure.Refusing(e.Reason, e.Message, e.Object, "", e.Last)
		if said[words] || refused && guards[refusal.Guard] || slices.ContainsFunc(told, func(t string) bool { return strings.Contains(t, failure.Words(e.Message)) }) {
			continue
		}
		said[words] = true
		out = append(out, e)
	}
	return out
}

// cause is the latest attempt kept of a failed job, of one retrying after
// a failure, or of one whose pods show failures of the attempt it is in
// (before its controller resets it), whose root cause status says first,
// and its number; 0 for a job doing well. (A job waiting after a
// preemption says why in its why line.)
func (s Status) cause() (failure.Attempt, int) {
	if len(s.Attempts) == 0 {
		return failure.Attempt{}, 0
	}
	latest := s.Attempts[len(s.Attempts)-1]
	troubled := s.State == Failed || s.Phase == "Resetting" || s.Phase == "Restarting"
	failing := s.Failure != nil && latest.Number == int(s.Retries)+1
	if !troubled && !failing {
		return failure.Attempt{}, 0
	}
	return latest, latest.Number
}

// unseen says which failed attempts nobody followed, and how to keep them.
func unseen(attempts []int) string {
	if len(attempts) == 0 {
		return ""
	}
	words := make([]string, len(attempts))
	for i, n := range attempts {
		words[i] = fmt.Sprint(n)
	}
	which := "attempt " + words[0]
	if len(words) > 1 {
		which = "attempts " + sentence(words, "and")
	}
	return which + " failed unseen: no generator followed the job then, and the pods that said why are gone; " +
		"follow a job (submit --wait, logs -f) to keep why each attempt fails, or keep the pods of a failed attempt a while with failureGracePeriodDuration"
}

// queue names the queue: Kueue's LocalQueue, or T9k's queue.
func (s Status) queue() string {
	if s.Kind == "PyTorchTrainingJob" || s.Kind == "DeepSpeedJob" {
		return "T9k queue " + s.Queue
	}
	return "LocalQueue " + s.Queue
}

// aside is what goes in parentheses after the state: the job's own phase,
// the retries, the position in the queue.
func (s Status) aside() []string {
	var more []string
	if s.Phase != "" {
		more = append(more, s.Phase)
	}
	switch {
	case s.Retries == 1:
		more = append(more, "1 retry")
	case s.Retries > 1:
		more = append(more, fmt.Sprintf("%d retries", s.Retries))
	}
	if s.Position > 0 {
		more = append(more, fmt.Sprintf("position %d", s.Position))
	}
	return more
}

// why is the reason and message, as one line; a reason that only repeats
// the state (Kueue's Failed) is left out.
func (s Status) why() string {
	switch {
	case s.Reason == "" || s.Reason == string(s.State):
		return oneLine(s.Message)
	case s.Message == "":
		return s.Reason
	}
	return s.Reason + ": " + oneLine(s.Message)
}

func (p Pods) String() string {
	if p.Unread {
		return fmt.Sprintf("not read (%d expected)", p.Expected)
	}
	text := fmt.Sprintf("ready %d/%d", p.Ready, p.Expected)
	var counts []string
	for _, c := range []struct {
		n    int
		name string
	}{{p.Pending, "pending"}, {p.Running - p.Ready, "running, not ready"}, {p.Succeeded, "succeeded"}, {p.Failed, "failed"}} {
		if c.n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", c.n, c.name))
		}
	}
	if len(counts) > 0 {
		text += "; " + strings.Join(counts, ", ")
	}
	return text
}

// String is the event as a line: FailedScheduling (Pod demo-worker-0, 3
// times): 0/4 nodes are available: ...
func (e Event) String() string {
	text := e.Reason + " (" + e.Object
	if e.Count > 1 {
		text += fmt.Sprintf(", %d times", e.Count)
	}
	return text + "): " + e.Message
}

// eventWidth is how much of an event status shows: the training operator
// says a failed pod's whole termination message in one.
const eventWidth = 300

// Cut cuts a line to n characters, the last an ellipsis.
func Cut(text string, n int) string {
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	return string([]rune(text)[:n-1]) + "…"
}

// oneLine joins the lines of a message.
func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}

// String says where a MultiKueue manager's job runs, as status writes it:
//
//	worker1 (context worker1, by its name): Running
//	worker1 (context east, by --worker): its copy is gone
//	worker1: not read: no context of your kubeconfig reaches ...
func (w *Worker) String() string {
	switch {
	case w == nil:
		return ""
	case w.Unread != "":
		return w.Name + ": not read: " + w.Unread
	}
	text := fmt.Sprintf("%s (context %s, by %s): ", w.Name, w.Context, w.Matched)
	if w.State == "" {
		return text + "its copy there is gone (MultiKueue deletes it once the job has finished, or is held)"
	}
	text += string(w.State)
	if w.Phase != "" {
		text += " (" + w.Phase + ")"
	}
	if w.Waiting != "" {
		text += ": " + oneLine(w.Waiting)
	}
	return text
}
