package failure

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var start = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// pod is a pod of a job on node gpu-node-3, with the statuses of its
// training container.
func pod(name string, statuses ...corev1.ContainerStatus) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + types.UID(name)}, Spec: corev1.PodSpec{NodeName: "gpu-node-3"}}
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = statuses
	return p
}

func terminated(code int32, reason, message string, at time.Time) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message, FinishedAt: metav1.NewTime(at)}
}

// The line status and submit --wait print for each cause, from the pod
// as the kubelet reports it.
func TestFailureOfAPod(t *testing.T) {
	exception := strings.Join(logLines(t, "exception.log"), "\n")
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{{
		"the program raised",
		pod("job-worker-0", corev1.ContainerStatus{Name: "pytorch", State: corev1.ContainerState{Terminated: terminated(1, "Error", exception, start)}}),
		[]string{"rank 3 (worker-0, local rank 1) exited 1: ZeroDivisionError: float division by zero"},
	}, {
		"out of memory",
		pod("job-worker-0", corev1.ContainerStatus{Name: "pytorch", State: corev1.ContainerState{Terminated: terminated(137, "OOMKilled", "", start)}}),
		[]string{"worker-0 (container pytorch) ran out of memory (OOMKilled: killed for using more than its memory limit)"},
	}, {
		"killed, then restarted: the instance before",
		pod("job-worker-0", corev1.ContainerStatus{Name: "pytorch", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: terminated(139, "Error", "", start)}}),
		[]string{"worker-0 (container pytorch) was killed by SIGSEGV (exit code 139)"},
	}, {
		"an image that cannot be pulled",
		pod("job-worker-0", corev1.ContainerStatus{Name: "pytorch", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: `Back-off pulling image "ghcr.io/acme/train:v2"`}}}),
		[]string{`worker-0 (container pytorch) cannot pull its image (ImagePullBackOff): Back-off pulling image "ghcr.io/acme/train:v2"`},
	}, {
		"a setup command failed",
		pod("job-master-0", corev1.ContainerStatus{Name: "pytorch", State: corev1.ContainerState{Terminated: terminated(1, "Error",
			strings.Join(logLines(t, "setup-command.log"), "\n"), start)}}),
		[]string{"master-0 (container pytorch): sh: 2: cd: can't cd to /tmp/no-such-folder (a command of the launch script); then rank 0 (master-0, local rank 0) exited 2: " +
			"/usr/bin/python3: can't open file '/tmp/allreduce.py': [Errno 2] No such file or directory (and 1 other process)"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			member := strings.TrimPrefix(c.pod.Name, "job-")
			for _, f := range FromPod(c.pod, member) {
				got = append(got, f.String())
			}
			require.Equal(t, c.want, got)
		})
	}

	// The node controller says a node stopped answering in an event of
	// each of its pods; the taint manager then deletes them.
	lost := pod("job-worker-1", corev1.ContainerStatus{Name: "pytorch", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	notReady, ok := FromEvent(&corev1.Event{Reason: "NodeNotReady", Message: "Node is not ready", LastTimestamp: metav1.NewTime(start)}, lost, "worker-1")
	require.True(t, ok)
	require.Equal(t, "worker-1 was lost with its node gpu-node-3, which stopped answering (NodeNotReady)", notReady.String())
	lost.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
		Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.NewTime(start)}}
	deleted := only(t, FromPod(lost, "worker-1"))
	require.Equal(t, notReady.Key, deleted.Key, "one failure, by the event or the pod")
	require.Equal(t, "worker-1 was lost with its node gpu-node-3, which stopped answering (NodeNotReady): Taint manager: deleting due to NoExecute taint", deleted.String())
	_, ok = FromEvent(&corev1.Event{Reason: "BackOff"}, lost, "worker-1")
	require.False(t, ok)

	evicted := pod("job-worker-1")
	evicted.Status.Phase, evicted.Status.Reason, evicted.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: ephemeral-storage."
	require.Equal(t, "worker-1 failed (Evicted): The node was low on resource: ephemeral-storage.", only(t, FromPod(evicted, "worker-1")).String())

	require.Empty(t, FromPod(pod("job-worker-2", corev1.ContainerStatus{Name: "pytorch", State: corev1.ContainerState{Terminated: terminated(0, "Completed", "", start)}}), "worker-2"))

	// A pod deleted while it ran (kubectl delete pod): its deletion, then
	// the signal; evicted through the Eviction API (a drain), its
	// DisruptionTarget condition says so.
	deletedPod := pod("job-master-0", corev1.ContainerStatus{Name: "pytorch", State: corev1.ContainerState{Terminated: terminated(143, "Error", "", start)}})
	deletedPod.DeletionTimestamp = &metav1.Time{Time: start}
	require.Equal(t, "master-0 was deleted while it ran (the cluster does not say by whom: a person, or a controller); then its container pytorch was killed by SIGTERM (exit code 143)",
		only(t, FromPod(deletedPod, "master-0")).String())
	deletedPod.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}}
	require.Equal(t, "master-0 was deleted while it ran (DisruptionTarget EvictionByEvictionAPI: Eviction API: evicting); then its container pytorch was killed by SIGTERM (exit code 143)",
		only(t, FromPod(deletedPod, "master-0")).String())
}

func only(t *testing.T, fs []Failure) Failure {
	t.Helper()
	require.Len(t, fs, 1)
	return fs[0]
}

// The root cause of an attempt: the first failure to end that does not
// follow from another; a preemption before all.
func TestRootOfAnAttempt(t *testing.T) {
	exit := func(code int32) *int32 { return &code }
	raised := Failure{Key: "a", Pod: "job-worker-1", Member: "worker-1", Container: "pytorch", Reason: "Error", ExitCode: exit(1), At: start.Add(2 * time.Second)}
	raised.SetLines([]string{"Traceback (most recent call last):", `  File "train.py", line 9`, "KeyError: 'labels'"})
	lostPeer := Failure{Key: "b", Pod: "job-master-0", Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: exit(1), At: start.Add(time.Second)}
	lostPeer.SetLines([]string{"Traceback (most recent call last):", `  File "train.py", line 7`, "RuntimeError: [gloo/transport/tcp/pair.cc:589] Read error: Connection reset by peer"})
	stopped := Failure{Key: "c", Pod: "job-worker-2", Member: "worker-2", Container: "pytorch", Reason: "Error", ExitCode: exit(143), Signal: "SIGTERM", At: start}

	a := Attempt{Number: 2, Of: 4, Failures: []Failure{stopped, lostPeer, raised}}
	root, ok := a.Root()
	require.True(t, ok)
	require.Equal(t, "a", root.Key)
	require.Equal(t, "attempt 2 of 4 failed: worker-1 (container pytorch) exited 1: KeyError: 'labels'; 2 other pods failed after it: 1 lost peer, 1 stopped by SIGTERM", a.Headline())

	preempted := Failure{Key: "job/preempted", Reason: Preempted, At: start.Add(time.Hour),
		Message: "by PyTorchJob team-b/big (Workload team-b/pytorchjob-big-3f2a1, priority 1000) in ClusterQueue team-a-cq"}
	a.Failures = append(a.Failures, preempted)
	require.Equal(t, "attempt 2 of 4 was preempted: by PyTorchJob team-b/big (Workload team-b/pytorchjob-big-3f2a1, priority 1000) in ClusterQueue team-a-cq; 3 other pods failed after it: 1 lost peer, 1 stopped by SIGTERM, 1 other failure", a.Headline())
	// Preempted, then run again, and failed: the failure is the cause.
	preempted.At = start.Add(-time.Hour)
	root, _ = Attempt{Failures: []Failure{preempted, raised}}.Root()
	require.Equal(t, "a", root.Key)
	require.Equal(t, "attempt 1: nothing failed was seen", Attempt{Number: 1}.Headline())

	// A pod deleted while it ran is the cause of what follows: the others
	// lose it, and torchrun's rendezvous fails; SIGTERMs of the reset come
	// after.
	deleted := stopped
	deleted.Key, deleted.Deletion, deleted.At = "d", "the cluster does not say by whom: a person, or a controller", start.Add(-time.Second)
	rendezvous := Failure{Key: "e", Pod: "job-worker-0", Member: "worker-0", Container: "pytorch", Reason: "Error", ExitCode: exit(1), At: start.Add(time.Second),
		Cause: Cause{Torchrun: "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError"}}
	root, _ = Attempt{Failures: []Failure{rendezvous, stopped, deleted}}.Root()
	require.Equal(t, "d", root.Key)
	// In an attempt Kueue preempted, the pods deleted are its consequence.
	preempted.At = start.Add(-2 * time.Second)
	root, _ = Attempt{Failures: []Failure{deleted, preempted}}.Root()
	require.Equal(t, "job/preempted", root.Key)
}

// What a follower prints as it notices a failure: the line, then the lines
// of the log that say why.
func TestTell(t *testing.T) {
	code := int32(1)
	raised := Failure{Key: "a", Pod: "job-worker-0", Member: "worker-0", Container: "pytorch", Reason: "Error", ExitCode: &code}
	raised.SetLines(logLines(t, "exception.log"))
	require.Equal(t, `attempt 1 of 2: rank 3 (worker-0, local rank 1) exited 1: ZeroDivisionError: float division by zero
  | Traceback (most recent call last):
  |   File "/tmp/programs/allreduce.py", line 56, in <module>
  |     scale(1.0, 0)
  |   File "/tmp/programs/allreduce.py", line 52, in scale
  |     return loss / steps
  |            ~~~~~^~~~~~~
  | ZeroDivisionError: float division by zero`, Tell(1, 2, raised))

	setup := raised
	setup.SetLines(logLines(t, "setup-command.log"))
	require.Equal(t, `attempt 2: worker-0 (container pytorch): sh: 2: cd: can't cd to /tmp/no-such-folder (a command of the launch script); then rank 0 (worker-0, local rank 0) exited 2: /usr/bin/python3: can't open file '/tmp/allreduce.py': [Errno 2] No such file or directory (and 1 other process)
  | sh: 2: cd: can't cd to /tmp/no-such-folder
  | /usr/bin/python3: can't open file '/tmp/allreduce.py': [Errno 2] No such file or directory`, Tell(2, 0, setup))

	quiet := raised
	quiet.SetLines([]string{"epoch 1", "epoch 2", "epoch 3", "epoch 4", "epoch 5", "epoch 6"})
	require.Equal(t, "attempt 1: worker-0 (container pytorch) exited 1\n  | epoch 2\n  | epoch 3\n  | epoch 4\n  | epoch 5\n  | epoch 6", Tell(1, 0, quiet))
}
