// Package torchlogs writes what the pods of a large PyTorch job print when
// one rank fails and the others fail after it, for the tests of the reading
// of failures (pkg/failure) and of the simulated cluster's scenario of a
// job of 64 pods (testdata/harness). The lines are written from the
// messages of PyTorch 2.x's ProcessGroupNCCL, gloo, the c10d store and
// torchrun: their wording is PyTorch's, the ranks, times and addresses are
// made up. Imported only by tests.
package torchlogs

import (
	"fmt"
	"time"
)

// Summary is torchrun's summary of a pod whose one failed process is
// rank (local rank local), which ended with exitcode; signal is the
// signal that ended it, "" for none.
func Summary(rank, local, exitcode int, signal string, at time.Time) []string {
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

// NCCLTimeout is a rank whose collective NCCL's watchdog timed out: it
// says so, and the C++ runtime ends the process with SIGABRT.
func NCCLTimeout(rank, local int, at time.Time) []string {
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
	}, Summary(rank, local, -6, "SIGABRT", at)...)
}

// GlooLostPeer is a rank whose peer's connection closed (on CPU).
func GlooLostPeer(rank, local int, at time.Time) []string {
	prefix := fmt.Sprintf("[rank%d]: ", rank)
	return append([]string{
		prefix + "Traceback (most recent call last):",
		prefix + `  File "/app/train.py", line 40, in <module>`,
		prefix + "    dist.all_reduce(loss)",
		prefix + "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.244.1.7]:41234",
	}, Summary(rank, local, 1, "", at)...)
}

// Raises is a rank that raises an error of its own, the last line of its
// traceback.
func Raises(rank, local int, at time.Time, err string) []string {
	prefix := fmt.Sprintf("[rank%d]: ", rank)
	return append([]string{
		prefix + "Traceback (most recent call last):",
		prefix + `  File "/app/train.py", line 52, in <module>`,
		prefix + "    loss = step(model, batch)",
		prefix + err,
	}, Summary(rank, local, 1, "", at)...)
}
