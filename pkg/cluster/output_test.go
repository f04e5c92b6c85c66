package cluster

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/failure"
)

// status of a running job reads the last line of rank 0's pod alone, with
// the kubelet's time of it: one line, one log, whatever the pods.
func TestStatusReadsTheLastOutput(t *testing.T) {
	// Pods running and ready.
	readyPod := func(role, uid string) string {
		return ptjPod(role, 0, uid, runningFor(0)) + "\n  conditions: [{type: Ready, status: 'True'}]"
	}
	client := cluster(t, nil, appWrapper("{phase: Running}"), readyPod("master", "m"), readyPod("worker", "w"))
	source := &fakeLogs{logs: map[string]string{"demo-master-0/pytorch": "[rank0] step 4021 | loss 2.3012\n", "demo-worker-0/pytorch": "w\n"}}
	client.LogSource = source
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.NotNil(t, s.Output)
	require.Equal(t, Output{Member: "master-0", At: logStart, Line: "[rank0] step 4021 | loss 2.3012", QuietSeconds: s.Output.QuietSeconds}, *s.Output)
	require.Contains(t, source.asked, "ml/demo-master-0/pytorch container=pytorch follow=false timestamps=true tailLines=1")
	for _, asked := range source.asked {
		require.NotContains(t, asked, "demo-worker-0", "a worker's log")
	}
	// Written long ago (the fake's lines are of 2026-11-27): the job may
	// be stuck.
	require.Contains(t, s.Lines(), "\n  output:    master-0 has written nothing for ")

	// A job not running has no output read.
	client = cluster(t, nil, appWrapper("{phase: Suspended}"), ptjPod("master", 0, "m", runningFor(0)))
	client.LogSource = source
	s, err = client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Nil(t, s.Output)
}

// The output as status says it: when rank 0 wrote, and once it has been
// quiet for QuietAfter, that the job may be stuck and how to see each
// pod's last line.
func TestOutputLine(t *testing.T) {
	o := Output{Member: "master-0", Line: "[rank0] step 4021 | loss 2.3012  ", QuietSeconds: 12}
	require.Equal(t, "master-0 wrote 12s ago: [rank0] step 4021 | loss 2.3012", o.String("demo"))
	o.QuietSeconds = 42 * 60
	require.Equal(t, "master-0 has written nothing for 42m (its last line: [rank0] step 4021 | loss 2.3012): the job may be stuck; "+
		"generator logs demo --tail 1 --timestamps shows each pod's last line and when it wrote it", o.String("demo"))
	o.QuietSeconds, o.Line = 0, string(make([]byte, 300))
	require.Contains(t, o.String("demo"), "…")
}

// A running job whose pods show failures of the attempt it is in, before
// its controller resets it: status says the attempt's cause, and what
// failed after it, as of a failed job.
func TestStatusOfAJobFailingNow(t *testing.T) {
	failedPod := ptjPod("worker", 0, "w-1", `{name: pytorch, state: {terminated: {exitCode: 1, reason: Error, finishedAt: "2026-11-26T10:00:30Z",
    message: `+strconv.Quote(traceback)+`}}}`)
	timedOut := ptjPod("master", 0, "m-1", `{name: pytorch, state: {terminated: {exitCode: 134, reason: Error, finishedAt: "2026-11-26T10:10:00Z",
    message: "terminate called after throwing an instance of 'c10::DistBackendError'\n  what():  [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600031 milliseconds before timing out."}}}`)
	client := cluster(t, nil, retrying("{phase: Running, conditions: [{type: PodsReady, status: 'True'}]}"), failedPod, timedOut)
	client.Keeper = &failure.Keeper{Dir: t.TempDir()}
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Contains(t, s.Lines(), "\n  cause:     attempt 1 of 3 failed: rank 3 (worker-0, local rank 1) exited 1: ZeroDivisionError: float division by zero; "+
		"1 other pod failed after it: 1 NCCL timeout\n")
	require.NotContains(t, s.Lines(), "\n  failed:")
}
