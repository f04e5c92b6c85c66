package cluster

import (
	"fmt"
	"strings"
)

// Line writes the status as one line, for a live line or a log:
//
//	AppWrapper demo: Queued in LocalQueue team-a (position 2): Pending: couldn't assign flavors ...
//	AppWrapper demo: Running, pods ready 4/4
//	AppWrapper demo: Failed (3 retries): FoundFailedPods; pod demo-master-0, container pytorch, exit code 1 (Error)
func (s Status) Line() string {
	return fmt.Sprintf("%s %s: %s", s.Kind, s.Name, s.summary())
}

// summary is the line without the job's name: "Running, pods ready 4/4".
func (s Status) summary() string {
	var b strings.Builder
	b.WriteString(string(s.State))
	if s.State == Queued && s.Queue != "" {
		fmt.Fprintf(&b, " in %s", s.queue())
	}
	if more := s.aside(); len(more) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(more, ", "))
	}
	switch s.State {
	case Admitted, Running:
		fmt.Fprintf(&b, ", pods ready %d/%d", s.Pods.Ready, s.Pods.Expected)
		if s.Pods.Succeeded > 0 {
			fmt.Fprintf(&b, " (%d succeeded)", s.Pods.Succeeded)
		}
	case Succeeded:
		if s.Pods.Succeeded > 0 {
			fmt.Fprintf(&b, ", pods succeeded %d/%d", s.Pods.Succeeded, s.Pods.Expected)
		}
	}
	if why := s.why(); why != "" {
		b.WriteString(": " + why)
	}
	if s.FailedPod != nil {
		b.WriteString("; " + s.FailedPod.String())
	}
	if s.Pods.Problem != "" && (s.State == Admitted || s.State == Running) {
		b.WriteString("; " + oneLine(s.Pods.Problem))
	}
	return b.String()
}

// Lines writes the status as a few lines, one a subject:
//
//	AppWrapper "demo" in namespace "ml": Failed (3 retries)
//	  why:       FoundFailedPods
//	  failed:    pod demo-master-0, container pytorch, exit code 1 (Error)
//	  pods:      ready 0/2; 1 succeeded, 1 failed
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
	line("why", s.why())
	if s.FailedPod != nil {
		failed := s.FailedPod.String()
		if s.FailedPod.Message != "" {
			failed += ": " + oneLine(s.FailedPod.Message)
		}
		line("failed", failed)
	}
	line("pods", s.Pods.String())
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
	for _, e := range s.Warnings {
		// Kueue's pending reason is an event of its Workload too: said once.
		if e.Message != oneLine(s.Message) {
			line("warning", e.String())
		}
	}
	for _, note := range s.Notes {
		line("not read", note)
	}
	return b.String()
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

func (f FailedPod) String() string {
	text := "pod " + f.Pod
	if f.Container != "" {
		text += ", container " + f.Container
	}
	if f.ExitCode != nil {
		text += fmt.Sprintf(", exit code %d", *f.ExitCode)
		if f.Reason != "" {
			text += " (" + f.Reason + ")"
		}
	} else if f.Reason != "" {
		text += ": " + f.Reason
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

// oneLine joins the lines of a message.
func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}
