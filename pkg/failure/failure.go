// Package failure says why a job failed: what a failure is (a container
// that exited with an error, a pod evicted, lost with its node or without
// its image, a job preempted by Kueue), how it is read from a pod and from
// the lines of its log, which failure of an attempt is its root cause, how
// it is said in one line, and how it is kept on the user's machine after
// the pods are gone (Keeper). Reading the cluster is the cluster package's;
// this package works on what it read.
package failure

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Failure is one thing that failed in an attempt of a job: a container of
// a pod (or the pod itself, evicted or lost), or the job (preempted).
type Failure struct {
	// Key tells failures apart: the pod's uid, the container and its
	// restart count ("" for the job's own).
	Key string `json:"key"`
	// Pod is the pod's name, Member its place in the job (worker-1); ""
	// for a failure of the job itself.
	Pod       string `json:"pod,omitempty"`
	Member    string `json:"member,omitempty"`
	Container string `json:"container,omitempty"`
	// Restart is the container's restart count when it failed: 0 for its
	// first run.
	Restart int32  `json:"restart,omitempty"`
	Node    string `json:"node,omitempty"`
	// Reason is the kubelet's, the node controller's or Kueue's word:
	// Error, OOMKilled, Evicted, ImagePullBackOff, NodeNotReady, Preempted.
	Reason   string `json:"reason"`
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Signal is the signal that ended the container, from an exit code
	// above 128.
	Signal  string `json:"signal,omitempty"`
	Message string `json:"message,omitempty"`
	// At is when it ended, or was seen.
	At time.Time `json:"at,omitzero"`
	// Deletion says that the pod was deleted while its container ran, and
	// what the cluster tells of why: its DisruptionTarget condition (an
	// eviction, a preemption, a drain), or that it tells nothing (a person
	// or a controller deleted it); "" for a pod not deleted.
	Deletion string `json:"deletion,omitempty"`
	// Cause is what its lines say; Lines are its last lines.
	Cause Cause    `json:"cause,omitzero"`
	Lines []string `json:"lines,omitempty"`
	// Of a refusal (Refused): Object is whose controller said it
	// (PyTorchJob ng1, Job ng1-node-0), Guard what refused the pods (Pod
	// Security restricted (latest), ResourceQuota team-gpus), Fix how to
	// get past it, and Certain that it refuses the same pods every time.
	Object  string `json:"object,omitempty"`
	Guard   string `json:"guard,omitempty"`
	Fix     string `json:"fix,omitempty"`
	Certain bool   `json:"certain,omitempty"`
}

// The reasons this package gives, beside the kubelet's own (Error,
// OOMKilled, Evicted, ErrImagePull, ImagePullBackOff).
const (
	// NodeNotReady: the pod's node stopped answering while it ran.
	NodeNotReady = "NodeNotReady"
	// Preempted: Kueue took the job's quota back for another workload.
	Preempted = "Preempted"
)

// signals are the names of the signals a container's exit code above 128
// says ended it.
var signals = map[int32]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
	9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM"}

// imageReasons are the reasons a container waits without its image.
var imageReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// FromPod reads the failures a pod shows: each container that ended with an
// error (the one running now, or the instance before its restart), a
// container that cannot pull its image, and the pod itself when it failed
// without a container's exit code (evicted) or lost its node. member is the
// pod's place in the job. The lines of a container are those of its
// termination message, which the kubelet fills with the log's last lines
// when terminationMessagePolicy is FallbackToLogsOnError.
func FromPod(pod *corev1.Pod, member string) []Failure {
	var out []Failure
	base := Failure{Pod: pod.Name, Member: member, Node: pod.Spec.NodeName, Deletion: deletion(pod)}
	for _, c := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		// The instance before the last restart, then the last.
		instances := []struct {
			restarts int32
			ended    *corev1.ContainerStateTerminated
		}{{c.RestartCount - 1, c.LastTerminationState.Terminated}, {c.RestartCount, c.State.Terminated}}
		for _, instance := range instances {
			restarts, t := instance.restarts, instance.ended
			if t == nil || t.ExitCode == 0 || restarts < 0 {
				continue
			}
			f := base
			f.Key = fmt.Sprintf("%s/%s/%d", pod.UID, c.Name, restarts)
			f.Container, f.Restart, f.Reason, f.At = c.Name, restarts, t.Reason, t.FinishedAt.Time
			code := t.ExitCode
			f.ExitCode = &code
			if t.Signal != 0 {
				f.Signal = signals[t.Signal]
			} else if code > 128 {
				f.Signal = signals[code-128]
			}
			f.SetLines(strings.Split(strings.TrimRight(t.Message, "\n"), "\n"))
			out = append(out, f)
		}
		if w := c.State.Waiting; w != nil && imageReasons[w.Reason] {
			f := base
			f.Key = fmt.Sprintf("%s/%s/image", pod.UID, c.Name)
			f.Container, f.Reason, f.Message, f.At = c.Name, w.Reason, w.Message, time.Now()
			out = append(out, f)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, cond := range pod.Status.Conditions {
		// The taint manager deletes the pods of a node that stopped
		// answering, once their toleration of it runs out.
		if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == "DeletionByTaintManager" {
			return []Failure{lostNode(pod, base, cond.Message, cond.LastTransitionTime.Time)}
		}
	}
	if pod.Status.Phase == corev1.PodFailed {
		f := base
		f.Key = fmt.Sprintf("%s/pod", pod.UID)
		f.Reason, f.Message, f.At = pod.Status.Reason, pod.Status.Message, time.Now()
		if f.Reason == "" {
			f.Reason = "Failed"
		}
		return []Failure{f}
	}
	return nil
}

// FromEvent reads the failure a Warning event says of a pod of the job:
// its node stopped answering (the node controller's NodeNotReady, which
// marks the pod not ready and says nothing else of it), or the kubelet
// evicted it. False for any other event.
func FromEvent(e *corev1.Event, pod *corev1.Pod, member string) (Failure, bool) {
	base := Failure{Pod: pod.Name, Member: member, Node: pod.Spec.NodeName}
	at := e.LastTimestamp.Time
	if at.IsZero() {
		at = e.EventTime.Time
	}
	switch e.Reason {
	case NodeNotReady:
		return lostNode(pod, base, "", at), true
	case "Evicted":
		base.Key = fmt.Sprintf("%s/pod", pod.UID)
		base.Reason, base.Message, base.At = e.Reason, e.Message, at
		return base, true
	}
	return Failure{}, false
}

// deletion says why a pod was deleted, as its DisruptionTarget condition
// tells (EvictionByEvictionAPI: Eviction API: evicting), or that nothing
// tells; "" when it is not being deleted.
func deletion(pod *corev1.Pod) string {
	if pod.DeletionTimestamp == nil {
		return ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return withMessage("DisruptionTarget "+c.Reason, c.Message)
		}
	}
	return "the cluster does not say by whom: a person, or a controller"
}

// lostNode is the failure of a pod whose node stopped answering.
func lostNode(pod *corev1.Pod, base Failure, message string, at time.Time) Failure {
	base.Key = fmt.Sprintf("%s/node", pod.UID)
	base.Deletion = ""
	base.Reason, base.Message, base.At = NodeNotReady, message, at
	return base
}

// Waiting tells whether the failure is of a container that waits (for its
// image), not of one that ended.
func (f Failure) Waiting() bool { return imageReasons[f.Reason] }

// maxLines and maxLineBytes bound what a failure keeps of its lines: the
// last ones, and each cut to its start.
const (
	maxLines     = 50
	maxLineBytes = 256
)

// CauseLines is how many of a failed container's last lines are read for
// its cause (SetLines): torchrun's summary of a pod's processes and the
// failing rank's traceback before it, 88 lines above the end with 8
// processes (torch 2.11), more than the failure keeps.
const CauseLines = 200

// SetLines keeps the last lines of the failed container, and what they say
// of its cause: give it the last CauseLines.
func (f *Failure) SetLines(lines []string) {
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	f.Cause = Read(lines)
	lines = lines[max(0, len(lines)-maxLines):]
	f.Lines = make([]string, len(lines))
	for i, l := range lines {
		if len(l) > maxLineBytes {
			l = strings.ToValidUTF8(l[:maxLineBytes], "") + "…"
		}
		f.Lines[i] = l
	}
	if len(f.Lines) == 0 {
		f.Lines = nil
	}
}

// consequence tells whether the failure likely follows from another: a
// container stopped by SIGTERM (its job was being reset, or preempted) in a
// pod not deleted, or a process that lost its peer. A deleted pod is a
// cause, unless Root finds it the consequence of a preemption.
func (f Failure) consequence() bool {
	return f.Signal == "SIGTERM" && f.Deletion == "" || f.Cause.Consequence != "" && f.Cause.Shell == ""
}

// summaryLead is how long before its container's end torchrun's time of a
// process's failure may be and still be taken (failedAt): torchrun stops
// the pod's other processes in seconds (SIGTERM, then SIGKILL after 30 s);
// a time further off is of a clock in another zone.
const summaryLead = 5 * time.Minute

// failedAt is when the failure happened: torchrun's time of its process's
// failure (Cause.At) when it is a little before its container's end, else
// that end. A pod whose rank failed first may end after pods that lost
// it, while torchrun stopped its other processes.
func (f Failure) failedAt() time.Time {
	if at := f.Cause.At; !at.IsZero() && !f.At.IsZero() && !at.Before(f.At.Add(-summaryLead)) && !at.After(f.At.Add(time.Second)) {
		return at
	}
	return f.At
}

// Who names what failed: "rank 3 (worker-1, local rank 1)", "worker-1
// (container setup)", "the job".
func (f Failure) Who() string {
	name := f.Member
	switch {
	case name == "" && f.Pod == "":
		return "the job"
	case name == "":
		name = "pod " + f.Pod
	}
	if c := f.Cause; c.Rank != nil {
		return fmt.Sprintf("rank %d (%s, local rank %d)", *c.Rank, name, *c.LocalRank)
	}
	if f.Container != "" {
		return fmt.Sprintf("%s (container %s)", name, f.Container)
	}
	return name
}

// String says the failure in one line:
//
//	rank 3 (worker-1, local rank 1) exited 1: ZeroDivisionError: division by zero
//	master-0 (container pytorch): sh: 3: cd: can't cd to /data (a command of the launch script), then rank 0 exited 2: ...
//	worker-1 (container pytorch) ran out of memory (OOMKilled: over its limit)
func (f Failure) String() string {
	who := f.Who()
	switch {
	case f.Reason == Preempted:
		return "the job was preempted: " + f.Message
	case f.Reason == Refused:
		return f.refusedString()
	case f.Reason == NodeNotReady:
		text := fmt.Sprintf("%s was lost with its node %s, which stopped answering (NodeNotReady)", who, f.Node)
		return withMessage(text, f.Message)
	case imageReasons[f.Reason]:
		return withMessage(fmt.Sprintf("%s cannot pull its image (%s)", who, f.Reason), f.Message)
	case f.Reason == "OOMKilled":
		return fmt.Sprintf("%s ran out of memory (OOMKilled: killed for using more than its memory limit)", who)
	case f.ExitCode == nil:
		return withMessage(fmt.Sprintf("%s failed (%s)", who, f.Reason), f.Message)
	}
	c := f.Cause
	var text string
	if f.Deletion != "" {
		pod := Failure{Pod: f.Pod, Member: f.Member}
		text = fmt.Sprintf("%s was deleted while it ran (%s); then ", pod.Who(), f.Deletion)
		if c.Rank == nil {
			who = "its container " + f.Container
		}
	}
	if c.Shell != "" {
		text += fmt.Sprintf("%s: %s (a command of the launch script); then ", f.containerWho(), c.Shell)
		if c.Rank == nil {
			who = "the container"
		}
	}
	text += who + " " + ended(f, c)
	switch {
	case c.Error != "":
		text += ": " + strings.Join(append([]string{c.Error}, c.More...), "; ")
		switch {
		case c.Unattributed:
			text += " (it may be another process's, and its message partial: the pod's processes wrote their lines unprefixed, amid each other's)"
		case c.Partial:
			text += " (its message may be partial: the pod's processes wrote their lines unprefixed, amid each other's)"
		}
	case c.Torchrun != "":
		text += ": torchrun: " + c.Torchrun
	}
	if c.Others > 0 {
		text += fmt.Sprintf(" (and %d other %s)", c.Others, plural(c.Others, "process", "processes"))
	}
	return text
}

// containerWho names the pod and container, without the rank.
func (f Failure) containerWho() string {
	g := f
	g.Cause = Cause{}
	return g.Who()
}

// ended says how a failed container (or the rank torchrun names) ended:
// "exited 1", "was killed by SIGKILL".
func ended(f Failure, c Cause) string {
	switch {
	case c.Signal != "":
		return "was killed by " + c.Signal
	case c.ExitCode != nil:
		return fmt.Sprintf("exited %d", *c.ExitCode)
	case f.Signal != "":
		return fmt.Sprintf("was killed by %s (exit code %d)", f.Signal, *f.ExitCode)
	}
	return fmt.Sprintf("exited %d", *f.ExitCode)
}

func withMessage(text, message string) string {
	if message = oneLine(message); message != "" {
		return text + ": " + message
	}
	return text
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// oneLine joins the lines of a message.
func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}
