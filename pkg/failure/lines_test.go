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
	require.Equal(t, Cause{Error: "RuntimeError: boom"}, Read([]string{
		"[rank2]: Traceback (most recent call last):",
		"[rank2]: RuntimeError: boom",
		"[rank3]: step 12",
		"[rank2]: not the message any more",
	}))
	require.Equal(t, Cause{Error: "RuntimeError: boom"}, Read([]string{
		"Traceback (most recent call last):",
		"RuntimeError: boom",
		"W1128 07:55:33.952000 501 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 522 closing signal SIGTERM",
	}))
	// Without torchrun's prefixes (torch 1.13), another process's
	// traceback may come amid the message: its lines are no part of it.
	require.Equal(t, Cause{Error: "RuntimeError: rank 2: the loss is NaN", More: []string{"at step 0, batch 0"}}, Read([]string{
		"Traceback (most recent call last):",
		`  File "/tmp/programs/allreduce.py", line 82, in <module>`,
		"RuntimeError: rank 2: the loss is NaN",
		"  at step 0, batch 0",
		`  File "/tmp/programs/allreduce.py", line 82, in <module>`,
		`    check(float("nan"))`,
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
	// is rank 4, and rank 0 is stopped. The message's next line says
	// why; CUDA's advice after it, which every such error repeats, is
	// left out.
	require.Equal(t, Cause{Rank: ptr(4), LocalRank: ptr(4), ExitCode: ptr(1), Others: 7, At: at("2026-11-28_06:26:45"),
		Error: "torch.AcceleratorError: CUDA error: invalid device ordinal", More: []string{"GPU device may be out of range, do you have enough GPUs?"}},
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
