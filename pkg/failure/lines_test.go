package failure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// Each parser of torchrun's output, on torchrun's real output.
func TestReadTorchrunOutput(t *testing.T) {
	for _, c := range []struct {
		log  string
		want Cause
	}{{
		// Rank 3 raises: torchrun's root cause, and the rank's traceback.
		"exception.log",
		Cause{Rank: ptr(3), LocalRank: ptr(1), ExitCode: ptr(1), Error: "ZeroDivisionError: float division by zero"},
	}, {
		// A setup command cannot change folder; the program is then not
		// found, by both processes.
		"setup-command.log",
		Cause{Rank: ptr(0), LocalRank: ptr(0), ExitCode: ptr(2), Others: 1,
			Shell: "sh: 2: cd: can't cd to /tmp/no-such-folder",
			Error: "/usr/bin/python3: can't open file '/tmp/allreduce.py': [Errno 2] No such file or directory"},
	}, {
		// Rank 1 is killed; torchrun names rank 0 first, which only lost
		// its peer.
		"sigkill.log",
		Cause{Rank: ptr(1), LocalRank: ptr(1), Signal: "SIGKILL", Others: 1},
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
	require.Equal(t, Cause{Rank: ptr(0), LocalRank: ptr(0), ExitCode: ptr(1), Error: "ValueError: bad lr 3.0"}, read("raise.log"))
	oom := read("oom.log")
	require.True(t, strings.HasPrefix(oom.Error, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 400.00 GiB."), oom.Error)
	require.Equal(t, Cause{Rank: ptr(0), LocalRank: ptr(0), ExitCode: ptr(1), Error: oom.Error}, oom)
	kill := read("kill.log")
	require.Equal(t, Cause{Rank: ptr(0), LocalRank: ptr(0), Signal: "SIGKILL"}, kill)
	f := Failure{Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: ptr(int32(1)), Cause: kill}
	require.Equal(t, "rank 0 (master-0, local rank 0) was killed by SIGKILL", f.String())
}
