package failure

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The lines below are written for these tests from the messages of
// PyTorch 2.x's ProcessGroupNCCL, gloo, the c10d store and torchrun (their
// wording is PyTorch's; the ranks, times and addresses are made up): what
// the pods of a large job print when one rank fails and the others fail
// after it.

// summary is torchrun's summary of a pod whose one failed process is
// rank (local rank local), which ended with exitcode; signal is the
// signal that ended it, "" for none.
func summary(rank, local, exitcode int, signal string, at time.Time) []string {
	traceback := "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
	if signal != "" {
		traceback = fmt.Sprintf("Signal %d (%s) received by PID %d", -exitcode, signal, 100+local)
	}
	return []string{
		fmt.Sprintf("E%s 41 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: %d) local_rank: %d (pid: %d) of binary: /opt/venv/bin/python", at.Format("0102 15:04:05.000000"), exitcode, local, 100+local),
		"Traceback (most recent call last):",
		`  File "/opt/venv/lib/python3.12/site-packages/torch/distributed/run.py", line 990, in main`,
		"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
		"============================================================",
		"train.py FAILED",
		"------------------------------------------------------------",
		"Failures:",
		"  <NO_OTHER_FAILURES>",
		"------------------------------------------------------------",
		"Root Cause (first observed failure):",
		"[0]:",
		"  time      : " + at.Format("2006-01-02_15:04:05"),
		"  host      : job-worker",
		fmt.Sprintf("  rank      : %d (local_rank: %d)", rank, local),
		fmt.Sprintf("  exitcode  : %d (pid: %d)", exitcode, 100+local),
		"  error_file: <N/A>",
		"  traceback : " + traceback,
		"============================================================",
	}
}

// ncclTimeout is a rank whose collective NCCL's watchdog timed out: it
// says so, and the C++ runtime ends the process with SIGABRT.
func ncclTimeout(rank, local int, at time.Time) []string {
	prefix := fmt.Sprintf("[rank%d]:", rank)
	work := "WorkNCCL(SeqNum=4021, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
	record := prefix + "[E" + at.Format("0102 15:04:05.000000000") + " ProcessGroupNCCL.cpp:%d] "
	return append([]string{
		fmt.Sprintf(record+"[Rank %d] Watchdog caught collective operation timeout: %s", 632, rank, work),
		fmt.Sprintf(record+"[Rank %d] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.", 684, rank),
		fmt.Sprintf(record+"[Rank %d] To avoid data inconsistency, we are taking the entire process down.", 698, rank),
		"terminate called after throwing an instance of 'c10::DistBackendError'",
		fmt.Sprintf("  what():  [PG ID 0 PG GUID 0(default_pg) Rank %d] Process group watchdog thread terminated with exception: [Rank %d] Watchdog caught collective operation timeout: %s", rank, rank, work),
		"Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):",
		"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f3b6d41df86 in /opt/venv/lib/python3.12/site-packages/torch/lib/libc10.so)",
	}, summary(rank, local, -6, "SIGABRT", at)...)
}

// glooLostPeer is a rank whose peer's connection closed (on CPU).
func glooLostPeer(rank, local int, at time.Time) []string {
	prefix := fmt.Sprintf("[rank%d]: ", rank)
	return append([]string{
		prefix + "Traceback (most recent call last):",
		prefix + `  File "/app/train.py", line 40, in <module>`,
		prefix + "    dist.all_reduce(loss)",
		prefix + "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.244.1.7]:41234",
	}, summary(rank, local, 1, "", at)...)
}

// raises is a rank that raises an error of its own.
func raises(rank, local int, at time.Time) []string {
	prefix := fmt.Sprintf("[rank%d]: ", rank)
	return append([]string{
		prefix + "Traceback (most recent call last):",
		prefix + `  File "/app/train.py", line 52, in <module>`,
		prefix + "    raise RuntimeError(f\"loss is nan at step {step}\")",
		prefix + "RuntimeError: loss is nan at step 4021",
	}, summary(rank, local, 1, "", at)...)
}

// The errors that follow from another's failure are read as such, and of
// which kind.
func TestReadConsequences(t *testing.T) {
	at := time.Date(2026, 11, 28, 8, 10, 2, 0, time.UTC)
	timeout := Read(ncclTimeout(9, 1, at))
	require.Equal(t, "NCCL timeout", timeout.Consequence)
	require.Equal(t, "SIGABRT", timeout.Signal)
	require.Equal(t, 9, *timeout.Rank)
	require.Equal(t, at, timeout.At)
	require.True(t, strings.HasPrefix(timeout.Error, "c10::DistBackendError: [PG ID 0 PG GUID 0(default_pg) Rank 9] Process group watchdog thread terminated with exception: [Rank 9] Watchdog caught collective operation timeout: WorkNCCL("), timeout.Error)
	require.Empty(t, timeout.More, "the C++ runtime's frames are no part of the message")
	require.Equal(t, "lost peer", Read(glooLostPeer(3, 3, at)).Consequence)
	require.Empty(t, Read(raises(5, 5, at)).Consequence)
	for line, kind := range map[string]string{
		"torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2042, remote process exited or there was a network error, NCCL version 2.21.5": "lost peer",
		"torch.distributed.DistStoreError: recvValue failed on SocketImpl(fd=71, addr=[job-worker-3]:52644, remote=[job-master-0]:29500): Connection reset by peer":                                  "lost store",
		"RuntimeError: NCCL communicator was aborted on rank 12.":                                                                                "aborted process group",
		"RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete": "timeout",
		"ZeroDivisionError: division by zero":                                                                                                    "",
	} {
		c := Read([]string{"Traceback (most recent call last):", `  File "/app/train.py", line 3, in <module>`, line})
		require.Equal(t, kind, c.Consequence, line)
	}
	// torchrun's own error when another pod's agent closed the rendezvous.
	closed := Read([]string{"Traceback (most recent call last):",
		`  File "/opt/venv/lib/python3.12/site-packages/torch/distributed/run.py", line 990, in main`,
		"torch.distributed.elastic.rendezvous.api.RendezvousClosedError"})
	require.Equal(t, Cause{Torchrun: "torch.distributed.elastic.rendezvous.api.RendezvousClosedError", Consequence: "closed rendezvous"}, closed)
}

// A job of 64 pods of 8 processes: a rank of worker-16 raises first; torchrun
// stops its pod's other processes, which takes its container 30 s to end.
// Meanwhile three pods whose ranks talked to it (gloo) lose their peer at
// once, and end first; ten minutes later NCCL's watchdog ends the 60
// others. The root cause is the rank that raised, by torchrun's time of
// it, and the others are counted by kind.
func TestRootAcrossPods(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	exit := func(code int32) *int32 { return &code }
	pod := func(i int, lines []string, ended time.Time, code int32, signal string) Failure {
		member := fmt.Sprintf("worker-%d", i-1)
		if i == 0 {
			member = "master-0"
		}
		f := Failure{Key: fmt.Sprintf("uid-%d/pytorch/0", i), Pod: "job-" + member, Member: member, Container: "pytorch", Node: fmt.Sprintf("gpu-node-%d", i),
			Reason: "Error", ExitCode: exit(code), Signal: signal, At: ended}
		f.SetLines(lines)
		return f
	}
	var a Attempt
	a.Number, a.Of = 1, 2
	for i := range 64 {
		switch {
		case i == 17:
			a.Failures = append(a.Failures, pod(i, raises(8*i+5, 5, t0), t0.Add(31*time.Second), 1, ""))
		case i >= 18 && i <= 20:
			a.Failures = append(a.Failures, pod(i, glooLostPeer(8*i, 0, t0.Add(time.Second)), t0.Add(2*time.Second), 1, ""))
		default:
			at := t0.Add(10*time.Minute + time.Duration(i)*time.Second)
			a.Failures = append(a.Failures, pod(i, ncclTimeout(8*i+1, 1, at), at.Add(time.Second), 134, "SIGABRT"))
		}
	}
	root, ok := a.Root()
	require.True(t, ok)
	require.Equal(t, "worker-16", root.Member)
	require.Equal(t, "attempt 1 of 2 failed: rank 141 (worker-16, local rank 5) exited 1: RuntimeError: loss is nan at step 4021; "+
		"63 other pods failed after it: 60 NCCL timeouts, 3 lost peers", a.Headline())
	// Kept, the first to fail are kept; a bound that cuts the others says
	// so.
	a.bound()
	require.False(t, a.Cut)
	require.Equal(t, "job-worker-16", a.Failures[0].Pod, "the first to fail first")
	many := Attempt{Number: 1, Failures: append(append([]Failure{}, a.Failures...), a.Failures[1:]...)}
	for i := range many.Failures[64:] {
		many.Failures[64+i].Key += "/again"
		many.Failures[64+i].Pod += "-again"
	}
	many.bound()
	require.True(t, many.Cut)
	require.Contains(t, many.Headline(), "; at least 63 other pods failed after it: ")
}

// Of two pods whose ranks raised, the first to fail is the one torchrun
// saw fail first, though its container ended last; a time of torchrun's
// far from its container's end is of a clock in another zone, and not
// taken.
func TestFirstToFail(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	exit := func(code int32) *int32 { return &code }
	first := Failure{Key: "a", Pod: "job-worker-3", Member: "worker-3", Container: "pytorch", Reason: "Error", ExitCode: exit(1), At: t0.Add(31 * time.Second)}
	first.SetLines(raises(29, 5, t0))
	second := Failure{Key: "b", Pod: "job-worker-7", Member: "worker-7", Container: "pytorch", Reason: "Error", ExitCode: exit(1), At: t0.Add(6 * time.Second)}
	second.SetLines(raises(61, 5, t0.Add(5*time.Second)))
	root, _ := Attempt{Failures: []Failure{second, first}}.Root()
	require.Equal(t, "a", root.Key)
	first.Cause.At = t0.Add(-5 * time.Hour)
	root, _ = Attempt{Failures: []Failure{second, first}}.Root()
	require.Equal(t, "b", root.Key)
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1023: "1,023", 1234567: "1,234,567"} {
		require.Equal(t, want, thousands(n))
	}
}

// The node of the root cause is said; when the first failures of two
// attempts were on one node, that it may be at fault, and how to keep the
// job off it.
func TestNodeOfTheCause(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	exit := func(code int32) *int32 { return &code }
	failed := func(key, node string, at time.Time) Failure {
		return Failure{Key: key, Pod: "job-worker-1", Member: "worker-1", Container: "pytorch", Node: node, Reason: "Error", ExitCode: exit(1), At: at}
	}
	s := Story{Attempts: []Attempt{
		{Number: 1, Failures: []Failure{failed("a", "gpu-node-7", t0)}},
		{Number: 2, Failures: []Failure{failed("b", "gpu-node-2", t0.Add(time.Hour))}},
	}}
	require.Equal(t, "gpu-node-2", s.Node(2))
	require.Equal(t, "gpu-node-7", s.Node(1))
	require.Empty(t, s.Node(3))
	s.Attempts = append(s.Attempts, Attempt{Number: 3, Failures: []Failure{failed("c", "gpu-node-7", t0.Add(2*time.Hour))}})
	require.Equal(t, "gpu-node-7, where attempts 1 and 3 failed first: the node may be at fault; keep the job off it (hostIgnoreList: [gpu-node-7] in its settings) "+
		"and tell your platform team, whose node health checks can take it out", s.Node(3))
	s.Attempts[2].Failures[0].Node = ""
	require.Empty(t, s.Node(3), "a failure of no node (the job's own)")
}
