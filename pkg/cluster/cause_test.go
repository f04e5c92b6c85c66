package cluster

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// ended is the status of a pod's training container that ended with exit
// code 1, its lines as its termination message.
func ended(lines ...string) string {
	return `{name: pytorch, state: {terminated: {exitCode: 1, reason: Error, finishedAt: "2026-11-28T08:14:06Z", message: ` +
		strconv.Quote(strings.Join(lines, "\n")) + `}}}`
}

// The failure of the job's last attempt that the follower sees first is a
// worker's lost peer; the master, whose rank failed first, ends after it,
// once the job has failed. The follower waits for its failure
// (failure.CauseGrace), and tells it as the job's.
func TestFollowWaitsForTheCause(t *testing.T) {
	lost := ptjPod("worker", 0, "w-1", ended("Traceback (most recent call last):",
		"RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:28052"))
	cause := ptjPod("master", 0, "m-1", ended("Root Cause (first observed failure):", "[0]:",
		"  time      : 2026-11-28_08:14:06", "  rank      : 2 (local_rank: 2)", "  exitcode  : 3 (pid: 524)"))
	var dyn *dynamicfake.FakeDynamicClient
	client := cluster(t, func(d *dynamicfake.FakeDynamicClient) { dyn = d }, appWrapper("{phase: Running}"))
	client.Poll = time.Millisecond
	var noticed []string
	readings := 0
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {
		if readings++; readings == 1 {
			require.NoError(t, dyn.Tracker().Create(pods, object(t, lost), "ml"))
			require.NoError(t, dyn.Tracker().Update(appWrappers, object(t, appWrapper("{phase: Failed}")), "ml"))
		}
	}, func(n Noticed) {
		noticed = append(noticed, n.Failure.Member)
		if n.Failure.Member == "worker-0" {
			// The master ends now.
			require.NoError(t, dyn.Tracker().Create(pods, object(t, cause), "ml"))
		}
	})
	require.NoError(t, err)
	require.Equal(t, []string{"worker-0", "master-0"}, noticed)
	require.Equal(t, "AppWrapper demo: Failed; rank 2 (master-0, local rank 2) exited 3", last.Line())
}
