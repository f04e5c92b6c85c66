package failure

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// logLines reads a log captured from a failed pod of the simulated
// cluster's process nodes (testdata/torchrun-1.13/README.md).
func logLines(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "torchrun-1.13", name))
	require.NoError(t, err)
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}

func ptr[T any](v T) *T { return &v }

// at is a time of torchrun's summary.
func at(text string) time.Time {
	t, err := time.Parse("2006-01-02_15:04:05", text)
	if err != nil {
		panic(err)
	}
	return t
}

// Each parser of torchrun's output, on torchrun's real output.
func TestReadTorchrunOutput(t *testing.T) {
	for _, c := range []struct {
		log  string
		want Cause
	}{{
		// Rank 3 raises: torchrun's root cause, and the rank's traceback.
		"exception.log",
		Cause{Rank: ptr(3), LocalRank: ptr(1), ExitCode: ptr(1), Error: "ZeroDivisionError: float division by zero", At: at("2026-11-26_04:26:50")},
	}, {
		// A setup command cannot change folder; the program is then not
		// found, by both processes.
		"setup-command.log",
		Cause{Rank: ptr(0), LocalRank: ptr(0), ExitCode: ptr(2), Others: 1, At: at("2026-11-26_04:27:18"),
			Shell: "sh: 2: cd: can't cd to /tmp/no-such-folder",
			Error: "/usr/bin/python3: can't open file '/tmp/allreduce.py': [Errno 2] No such file or directory"},
	}, {
		// Rank 1 is killed; torchrun names rank 0 first, which only lost
		// its peer.
		"sigkill.log",
		Cause{Rank: ptr(1), LocalRank: ptr(1), Signal: "SIGKILL", Others: 1, At: at("2026-11-26_03:36:42")},
	}, {
		// The other pods never join: torchrun's own error.
		"rendezvous-timeout.log",
		Cause{Torchrun: "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"},
	}} {
		t.Run(c.log, func(t *testing.T) {
			require.Equal(t, c.want, Read(logLines(t, c.log)))
		})
	}
}

func TestReadLines(t *testing.T) {
	// torchrun's prefix of a worker's lines (--tee, --local-ranks-filter).
	require.Equal(t, Cause{Error: "ValueError: bad batch size"}, Read([]string{
		"[rank1]: Traceback (most recent call last):",
		`[rank1]:   File "/app/train.py", line 3, in <module>`,
		"[rank1]:     raise ValueError('bad batch size')",
		"[rank1]: ValueError: bad batch size",
	}))
	// A chained exception ends the process with the last one.
	require.Equal(t, Cause{Error: "RuntimeError: could not load the checkpoint"}, Read([]string{
		"Traceback (most recent call last):",
		`  File "/app/train.py", line 3, in <module>`,
		"FileNotFoundError: ckpt.pt",
		"",
		"During handling of the above exception, another exception occurred:",
		"",
		"Traceback (most recent call last):",
		`  File "/app/train.py", line 5, in <module>`,
		"RuntimeError: could not load the checkpoint",
	}))
	// A message of several lines, of the rank's own: up to messageLines
	// more, not the next log record, another rank's line nor a blank one.
	require.Equal(t, Cause{Error: "RuntimeError: checkpoint mismatch", More: []string{"missing keys: layer.1.weight", "unexpected keys: layer.9.weight", "see the log above"}}, Read([]string{
		"[rank2]: Traceback (most recent call last):",
		`[rank2]:   File "/app/train.py", line 3, in <module>`,
		"[rank2]: RuntimeError: checkpoint mismatch",
		"[rank2]: missing keys: layer.1.weight",
		"[rank2]: unexpected keys: layer.9.weight",
		"[rank2]: see the log above",
		"[rank2]: and a line too many",
	}))
	// A message goes on in its process's lines, whatever other
	// processes write between them, up to its next line that is no part of
	// it.
	require.Equal(t, Cause{Error: "RuntimeError: boom", More: []string{"at step 12"}}, Read([]string{
		"[rank2]: Traceback (most recent call last):",
		"[rank2]: RuntimeError: boom",
		"[rank3]: step 12",
		"[rank2]: at step 12",
		"[rank2]:[W1128 06:26:35.447656612 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not called before program exit",
		"[rank2]: not the message any more",
	}))
	require.Equal(t, Cause{Error: "RuntimeError: boom"}, Read([]string{
		"Traceback (most recent call last):",
		"RuntimeError: boom",
		"W1128 07:55:33.952000 501 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 522 closing signal SIGTERM",
	}))
	// Without prefixes (torch 1.13 without --tee), the processes' lines
	// come amid each other's: a line that cannot end a traceback is
	// another process's, and the lines after the error may be another's
	// too, so they are not told, and the message may be partial.
	require.Equal(t, Cause{Error: "RuntimeError: rank 2: the loss is NaN", Partial: true}, Read([]string{
		"Traceback (most recent call last):",
		`  File "/tmp/programs/allreduce.py", line 82, in <module>`,
		"mp: rank 6 up",
		`    check(float("nan"))`,
		"RuntimeError: rank 2: the loss is NaN",
		"mp: rank 2 up",
		"  at step 0, batch 0",
		`  File "/tmp/programs/allreduce.py", line 82, in <module>`,
		`    check(float("nan"))`,
	}))
	// A message of one line is whole.
	require.Equal(t, Cause{Error: "ZeroDivisionError: float division by zero"}, Read([]string{
		"Traceback (most recent call last):",
		`  File "/tmp/programs/allreduce.py", line 56, in <module>`,
		"ZeroDivisionError: float division by zero",
		"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 5) of binary: /usr/bin/python3",
	}))
	// bash's words, and a program that is not there.
	require.Equal(t, Cause{Shell: "sh: line 4: torchrun: command not found"}, Read([]string{"sh: line 4: torchrun: command not found"}))
	require.True(t, Read(nil).Empty())
	require.True(t, Read([]string{"epoch 1, loss 0.3"}).Empty())
}

// torchrun 2.11's own output, from a GPU (testdata/torchrun-2.11/README.md),
// reads as the cause run --local gave there.
func TestReadTorchrun211(t *testing.T) {
	read := func(name string) Cause {
		data, err := os.ReadFile(filepath.Join("testdata", "torchrun-2.11", name))
		require.NoError(t, err)
		return Read(strings.Split(strings.TrimRight(string(data), "\n"), "\n"))
	}
	require.Equal(t, Cause{Rank: ptr(0), LocalRank: ptr(0), ExitCode: ptr(1), Error: "ValueError: bad lr 3.0", At: at("2026-11-26_20:21:12")}, read("raise.log"))
	oom := read("oom.log")
	require.True(t, strings.HasPrefix(oom.Error, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 400.00 GiB."), oom.Error)
	require.Equal(t, Cause{Rank: ptr(0), LocalRank: ptr(0), ExitCode: ptr(1), Error: oom.Error, At: at("2026-11-26_20:21:26")}, oom)
	kill := read("kill.log")
	require.Equal(t, Cause{Rank: ptr(0), LocalRank: ptr(0), Signal: "SIGKILL", At: at("2026-11-26_20:21:38")}, kill)
	f := Failure{Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(1)), Cause: kill}
	require.Equal(t, "rank 0 (master-0, local rank 0) was killed by SIGKILL", f.String())
}

// A pod of 8 processes, one failing (torch 2.11, testdata/torchrun-2.11):
// torchrun stops the 7 others with SIGTERM and lists each of them in its
// summary before its root cause; none of them is taken for the cause,
// however few of the last lines are read, and the failing rank's error is
// found in the CauseLines read.
func TestReadAPodOfEightProcesses(t *testing.T) {
	read := func(name string, last int) Cause {
		data, err := os.ReadFile(filepath.Join("testdata", "torchrun-2.11", name))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		return Read(lines[max(0, len(lines)-last):])
	}
	// Rank 5 raises while the others wait, on CPU.
	require.Equal(t, Cause{Rank: ptr(5), LocalRank: ptr(5), ExitCode: ptr(1), Others: 7, Error: "RuntimeError: loss is nan at step 12", At: at("2026-11-28_07:55:33")},
		read("one-of-eight-raises-cpu.log", CauseLines))
	// Its error is 88 lines above the end: the last 50 lines name the
	// rank, and no error, rather than a rank torchrun stopped.
	require.Equal(t, Cause{Rank: ptr(5), LocalRank: ptr(5), ExitCode: ptr(1), Others: 5, At: at("2026-11-28_07:55:33")}, read("one-of-eight-raises-cpu.log", 50))
	// Ranks 1 to 7 raise on a machine of one GPU; torchrun's root cause
	// is rank 4, and rank 0 is stopped. They raise before their process
	// group is up, where torch 2.x does not prefix their lines: the
	// message's next line may be another process's, and is not told.
	require.Equal(t, Cause{Rank: ptr(4), LocalRank: ptr(4), ExitCode: ptr(1), Others: 7, At: at("2026-11-28_06:26:45"),
		Error: "torch.AcceleratorError: CUDA error: invalid device ordinal", Partial: true},
		read("eight-processes-one-gpu.log", CauseLines))
	f := Failure{Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(1)), Cause: read("one-of-eight-raises-cpu.log", CauseLines)}
	require.Equal(t, "rank 5 (master-0, local rank 5) exited 1: RuntimeError: loss is nan at step 12 (and 7 other processes)", f.String())
	// The pod's line tells the message whole; its excerpt is the rank's
	// traceback, as before.
	data, err := os.ReadFile(filepath.Join("testdata", "torchrun-2.11", "two-pods-one-gpu.master-0.log"))
	require.NoError(t, err)
	f = Failure{Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(1))}
	f.SetLines(strings.Split(strings.TrimRight(string(data), "\n"), "\n"))
	require.Equal(t, "rank 0 (master-0, local rank 0) exited 1: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9; Last error: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60", f.String())
	excerpt := f.Excerpt()
	require.Equal(t, "[rank0]: Traceback (most recent call last):", excerpt[0])
	require.True(t, strings.HasSuffix(excerpt[len(excerpt)-1], "NCCL version 2.28.9"), excerpt)
	// Two pods on one GPU: NCCL's error in each pod, with the line of its
	// message that says what is wrong.
	for name, rank := range map[string]int{"two-pods-one-gpu.master-0.log": 0, "two-pods-one-gpu.worker-0.log": 1} {
		c := read(name, CauseLines)
		require.Equal(t, rank, *c.Rank, name)
		require.Equal(t, "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9", c.Error, name)
		require.Equal(t, []string{fmt.Sprintf("Last error: Duplicate GPU detected : rank %d and rank %d both on CUDA device 60", rank, 1-rank)}, c.More, name)
	}
}

// Three processes of four raise, each its own error of three lines
// (testdata/torchrun-1.13, Debian's torch 1.13); torchrun names rank 1.
// With --tee 2 (run --local's PET_TEE=2), each process's errors come after
// its prefix: the error told is rank 1's own, its message whole, though its
// traceback comes after the others', and its excerpt is its own lines.
// Without, the lines of the processes come amid each other's: the error
// is one that no prefix gives to rank 1, told as such, without the lines
// after it.
func TestReadAProcessOwnLines(t *testing.T) {
	tee := logLines(t, "three-raise-tee.log")
	c := Read(tee)
	require.Equal(t, Cause{Rank: ptr(1), LocalRank: ptr(1), ExitCode: ptr(1), Others: 2, At: at("2026-11-28_20:04:29"),
		Error: "RuntimeError: rank 1: the loss is NaN", More: []string{"at step 0, batch 0", "check the learning rate and the data"}}, c)
	f := Failure{Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(1))}
	f.SetLines(tee)
	require.Equal(t, "rank 1 (master-0, local rank 1) exited 1: RuntimeError: rank 1: the loss is NaN; at step 0, batch 0; check the learning rate and the data (and 2 other processes)", f.String())
	// The excerpt of all its lines (a follower reads CauseLines, more than
	// the failure keeps).
	f.Lines = tee
	require.Equal(t, []string{
		"[default1]:Traceback (most recent call last):",
		`[default1]:  File "/tmp/tee67/mp.py", line 8, in <module>`,
		`[default1]:    raise RuntimeError(f"rank {rank}: the loss is NaN\n  at step 0, batch 0\n  check the learning rate and the data")`,
		"[default1]:RuntimeError: rank 1: the loss is NaN",
	}, f.Excerpt())

	plain := Read(logLines(t, "three-raise.log"))
	require.Equal(t, Cause{Rank: ptr(1), LocalRank: ptr(1), ExitCode: ptr(1), Others: 2, At: at("2026-11-28_19:52:58"),
		Error: "RuntimeError: rank 2: the loss is NaN", Partial: true, Unattributed: true}, plain)
	f = Failure{Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(1)), Cause: plain}
	require.Equal(t, "rank 1 (master-0, local rank 1) exited 1: RuntimeError: rank 2: the loss is NaN (it may be another process's, and its message partial: "+
		"the pod's processes wrote their lines unprefixed, amid each other's) (and 2 other processes)", f.String())

	// torch 2.x under --tee: both prefixes, the local rank's and the
	// global rank's; the errors of other processes are not the rank's.
	require.Equal(t, Cause{Rank: ptr(6), LocalRank: ptr(2), ExitCode: ptr(1), Others: 1, Error: "ValueError: bad shard 6", More: []string{"in file 6.bin"}}, Read([]string{
		"[default1]:[rank5]: Traceback (most recent call last):",
		"[default2]:[rank6]: Traceback (most recent call last):",
		"[default1]:[rank5]: ValueError: bad shard 5",
		`[default2]:[rank6]:   File "/app/train.py", line 3, in <module>`,
		"[default1]:[rank5]: in file 5.bin",
		"[default2]:[rank6]: ValueError: bad shard 6",
		"[default2]:[rank6]: in file 6.bin",
		"Failures:",
		"[1]:",
		"  rank      : 5 (local_rank: 1)",
		"  exitcode  : 1 (pid: 11)",
		"------------------------------------------------------------",
		"Root Cause (first observed failure):",
		"[0]:",
		"  rank      : 6 (local_rank: 2)",
		"  exitcode  : 1 (pid: 12)",
	}))
}

// When torchrun's root cause only lost its peer, a process of its summary
// that failed of its own is the cause: where the prefixes tell the
// processes' errors apart, one whose own error is none of a consequence's,
// or that exited without one (rank 2's exit 3, while the others lost it).
// Without prefixes, nothing tells whose the errors are, and torchrun's
// root cause stays.
func TestReadAnotherProcessFailedFirst(t *testing.T) {
	lost := func(rank int, prefixed bool) []string {
		prefix := ""
		if prefixed {
			prefix = fmt.Sprintf("[rank%d]: ", rank)
		}
		return []string{prefix + "Traceback (most recent call last):", prefix + `  File "/job/mp.py", line 14, in <module>`,
			prefix + fmt.Sprintf("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:2805%d", rank)}
	}
	entry := func(n, rank, code int) []string {
		return []string{fmt.Sprintf("[%d]:", n), fmt.Sprintf("  rank      : %d (local_rank: %d)", rank, rank), fmt.Sprintf("  exitcode  : %d (pid: %d)", code, 500+rank)}
	}
	summary := append(append(append([]string{"Failures:"}, entry(1, 1, 1)...), entry(2, 2, 3)...), "----", "Root Cause (first observed failure):")
	summary = append(summary, entry(0, 0, 1)...)
	for _, prefixed := range []bool{true, false} {
		lines := append(append(lost(0, prefixed), lost(1, prefixed)...), summary...)
		c := Read(lines)
		if prefixed {
			require.Equal(t, Cause{Rank: ptr(2), LocalRank: ptr(2), ExitCode: ptr(3), Others: 2}, c)
		} else {
			require.Equal(t, 0, *c.Rank)
			require.Equal(t, "lost peer", c.Consequence)
		}
	}
}
