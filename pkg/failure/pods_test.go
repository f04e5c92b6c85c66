package failure

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/torchlogs"
)

// nan is the error of a rank that raises.
const nan = "RuntimeError: loss is nan at step 4021"

// The errors that follow from another's failure are read as such, and of
// which kind.
func TestReadConsequences(t *testing.T) {
	at := time.Date(2026, 11, 28, 8, 10, 2, 0, time.UTC)
	timeout := Read(torchlogs.NCCLTimeout(9, 1, at))
	require.Equal(t, "NCCL timeout", timeout.Consequence)
	require.Equal(t, "SIGABRT", timeout.Signal)
	require.Equal(t, 9, *timeout.Rank)
	require.Equal(t, at, timeout.At)
	require.True(t, strings.HasPrefix(timeout.Error, "c10::DistBackendError: [PG ID 0 PG GUID 0(default_pg) Rank 9] Process group watchdog thread terminated with exception: [Rank 9] Watchdog caught collective operation timeout: WorkNCCL("), timeout.Error)
	require.Empty(t, timeout.More, "the C++ runtime's frames are no part of the message")
	require.Equal(t, "lost peer", Read(torchlogs.GlooLostPeer(3, 3, at)).Consequence)
	require.Empty(t, Read(torchlogs.Raises(5, 5, at, nan)).Consequence)
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
			a.Failures = append(a.Failures, pod(i, torchlogs.Raises(8*i+5, 5, t0, nan), t0.Add(31*time.Second), 1, ""))
		case i >= 18 && i <= 20:
			a.Failures = append(a.Failures, pod(i, torchlogs.GlooLostPeer(8*i, 0, t0.Add(time.Second)), t0.Add(2*time.Second), 1, ""))
		default:
			at := t0.Add(10*time.Minute + time.Duration(i)*time.Second)
			a.Failures = append(a.Failures, pod(i, torchlogs.NCCLTimeout(8*i+1, 1, at), at.Add(time.Second), 134, "SIGABRT"))
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
	first.SetLines(torchlogs.Raises(29, 5, t0, nan))
	second := Failure{Key: "b", Pod: "job-worker-7", Member: "worker-7", Container: "pytorch", Reason: "Error", ExitCode: exit(1), At: t0.Add(6 * time.Second)}
	second.SetLines(torchlogs.Raises(61, 5, t0.Add(5*time.Second), nan))
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
// job off it, unless they were the same error of the program.
func TestNodeOfTheCause(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	exit := func(code int32) *int32 { return &code }
	failed := func(key, node string, at time.Time) Failure {
		return Failure{Key: key, Pod: "job-worker-1", Member: "worker-1", Container: "pytorch", Node: node, Reason: "Error", ExitCode: exit(1), At: at,
			Cause: Cause{Error: "torch.AcceleratorError: CUDA error: an illegal memory access was encountered (" + key + ")"}}
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
	// The same error of the program twice: more likely the program's.
	s.Attempts[2].Failures[0].Cause.Error = s.Attempts[0].Failures[0].Cause.Error
	require.Equal(t, "gpu-node-7, where attempts 1 and 3 failed first, the same way each time: more likely the program's than the node's", s.Node(3))
	s.Attempts[2].Failures[0].Node = ""
	require.Empty(t, s.Node(3), "a failure of no node (the job's own)")
}

// twoPods are the failures of the job of testdata/two-pods-cpu (torch
// 2.11's shape): rank 2 of master-0 exits 3, the four ranks of worker-0
// lose their peer; both containers end in the second of torchrun's time of
// their failure, master-0's at masterEnd, worker-0's at workerEnd.
func twoPods(t *testing.T, masterEnd, workerEnd time.Time) (master, worker Failure) {
	read := func(member string, ended time.Time) Failure {
		data, err := os.ReadFile(filepath.Join("testdata", "two-pods-cpu", member+".log"))
		require.NoError(t, err)
		f := Failure{Key: "uid-" + member + "/pytorch/0", Pod: "job-" + member, Member: member, Container: "pytorch", Node: "node-" + member,
			Reason: "Error", ExitCode: ptr(int32(1)), At: ended}
		f.SetLines(strings.Split(strings.TrimRight(string(data), "\n"), "\n"))
		return f
	}
	return read("master-0", masterEnd), read("worker-0", workerEnd)
}

// The root cause in one pod, its consequences in the other: whichever pod
// ended first, and in whatever order their failures were seen, the cause
// is the rank that exited, and the lost peers are counted after it; with
// torchrun's times of the failures, or without them (a container's end
// decides then). The lost peers alone are no cause yet (HasCause).
func TestTwoPodsOneCause(t *testing.T) {
	const why = "rank 2 (master-0, local rank 2) exited 3 (and 3 other processes); 1 other pod failed after it: 1 lost peer"
	second := time.Date(2026, 11, 28, 8, 14, 6, 0, time.UTC)
	for _, c := range []struct {
		name                 string
		masterEnd, workerEnd time.Time
		torchrunsTime        bool
	}{
		{"master ends first", second.Add(100 * time.Millisecond), second.Add(300 * time.Millisecond), true},
		{"worker ends first", second.Add(300 * time.Millisecond), second.Add(100 * time.Millisecond), true},
		{"in the same second, by the kubelet", second, second, true},
		{"worker ends first, no torchrun's time", second.Add(2 * time.Second), second.Add(time.Second), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			master, worker := twoPods(t, c.masterEnd, c.workerEnd)
			require.Equal(t, "lost peer", worker.Cause.Consequence)
			require.Equal(t, "rank 7 (worker-0, local rank 3) exited 1: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:28052 (and 3 other processes)", worker.String())
			if !c.torchrunsTime {
				master.Cause.At, worker.Cause.At = time.Time{}, time.Time{}
			}
			require.False(t, Attempt{Number: 1, Failures: []Failure{worker}}.HasCause())
			for _, seen := range [][]Failure{{master, worker}, {worker, master}} {
				a := Attempt{Number: 1, Failures: seen}
				require.True(t, a.HasCause())
				require.Equal(t, why, a.Why())
				require.Equal(t, "attempt 1 failed: "+why, a.Headline())
			}
		})
	}
}

// Two pods whose own failures no clock orders (torchrun's times, and the
// kubelet's, are of whole seconds) failed at once: both are named, in an
// order that does not depend on the order they were seen in. Times of
// other seconds, or exact times apart, order them.
func TestPodsFailedAtOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	raised := func(member string, rank int, at, ended time.Time) Failure {
		f := Failure{Key: "uid-" + member, Pod: "job-" + member, Member: member, Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(1)), At: ended}
		f.SetLines(torchlogs.Raises(rank, rank%8, at, fmt.Sprintf("ValueError: bad shard %d", rank)))
		return f
	}
	a := raised("worker-0", 9, t0, t0.Add(time.Second))
	b := raised("master-0", 3, t0, t0.Add(2*time.Second))
	lost := Failure{Key: "uid-worker-1", Pod: "job-worker-1", Member: "worker-1", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(1)), At: t0.Add(time.Second)}
	lost.SetLines(torchlogs.GlooLostPeer(17, 1, t0))
	const both = "2 pods failed at once: rank 3 (master-0, local rank 3) exited 1: ValueError: bad shard 3; and rank 9 (worker-0, local rank 1) exited 1: ValueError: bad shard 9; " +
		"1 other pod failed after them: 1 lost peer"
	for _, seen := range [][]Failure{{a, b, lost}, {lost, b, a}} {
		require.Equal(t, both, Attempt{Failures: seen}.Why())
	}
	c := raised("worker-2", 21, t0, t0.Add(time.Second))
	require.Equal(t, "3 pods failed at once: rank 3 (master-0, local rank 3) exited 1: ValueError: bad shard 3; rank 9 (worker-0, local rank 1) exited 1: ValueError: bad shard 9; and 1 more; "+
		"1 other pod failed after them: 1 lost peer", Attempt{Failures: []Failure{c, lost, a, b}}.Why())
	// A second apart: the first is the cause.
	b = raised("master-0", 3, t0.Add(time.Second), t0.Add(2*time.Second))
	require.Equal(t, "rank 9 (worker-0, local rank 1) exited 1: ValueError: bad shard 9; 2 other pods failed after it: 1 lost peer, 1 other failure", Attempt{Failures: []Failure{b, lost, a}}.Why())
	// run --local's exact ends, without torchrun's times: ordered; one
	// within a second of torchrun's is not.
	x := Failure{Pod: "job-master-0", Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(2)), At: t0.Add(300 * time.Millisecond)}
	y := Failure{Pod: "job-worker-0", Member: "worker-0", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(2)), At: t0.Add(200 * time.Millisecond)}
	require.Equal(t, "worker-0 (container pytorch) exited 2; 1 other pod failed after it", Attempt{Failures: []Failure{x, y}}.Why())
	z := raised("worker-0", 9, t0, t0.Add(700*time.Millisecond))
	require.True(t, strings.HasPrefix(Attempt{Failures: []Failure{x, z}}.Why(), "2 pods failed at once: "))
}

// The node is blamed only when the root causes that failed on it differ:
// the same rank exiting the same way twice, with its message or without,
// is more likely the program's; another rank, another exit code or
// another error points at the node.
func TestNodeBlamedOnEvidence(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	exited := func(n, rank int, code int32, message string) Attempt {
		f := Failure{Key: fmt.Sprintf("uid-%d", n), Pod: "job-master-0", Member: "master-0", Container: "pytorch", Node: "process-node-1", Reason: "Error",
			ExitCode: ptr(int32(1)), At: t0.Add(time.Duration(n) * time.Hour),
			Cause: Cause{Rank: ptr(rank), LocalRank: ptr(rank), ExitCode: ptr(int(code)), Error: message}}
		return Attempt{Number: n, Of: 2, Failures: []Failure{f}}
	}
	const program = "process-node-1, where attempts 1 and 2 failed first, the same way each time: more likely the program's than the node's"
	const node = "process-node-1, where attempts 1 and 2 failed first: the node may be at fault; keep the job off it (hostIgnoreList: [process-node-1] in its settings) " +
		"and tell your platform team, whose node health checks can take it out"
	for _, c := range []struct {
		name        string
		first, then Attempt
		want        string
	}{
		{"rank 1 exits 5 twice, without a message", exited(1, 1, 5, ""), exited(2, 1, 5, ""), program},
		{"with its message, then without", exited(1, 1, 5, "ValueError: bad lr"), exited(2, 1, 5, ""), program},
		{"with the same message", exited(1, 1, 5, "ValueError: bad lr"), exited(2, 1, 5, "ValueError: bad lr"), program},
		{"another rank", exited(1, 1, 5, ""), exited(2, 0, 5, ""), node},
		{"another exit code", exited(1, 1, 5, ""), exited(2, 1, 6, ""), node},
		{"another error", exited(1, 1, 5, "ValueError: bad lr"), exited(2, 1, 5, "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"), node},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Story{Attempts: []Attempt{c.first, c.then}}.Node(2))
		})
	}
}
