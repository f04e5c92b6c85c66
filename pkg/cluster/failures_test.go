package cluster

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/failure"
)

// The failure of a rank, as the kubelet keeps its log's last lines in a
// container's termination message (FallbackToLogsOnError).
const traceback = `Traceback (most recent call last):
  File "/app/train.py", line 9, in <module>
    loss = scale(1.0, 0)
ZeroDivisionError: float division by zero
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 31) of binary: /usr/bin/python3
Root Cause (first observed failure):
[0]:
  time      : 2026-11-26_10:00:00
  host      : demo-worker-0
  rank      : 3 (local_rank: 1)
  exitcode  : 1 (pid: 31)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================`

// retrying is the AppWrapper demo with retryLimit 2: three attempts.
func retrying(status string) string {
	return strings.Replace(appWrapper(status), "  uid: aw-uid\n", "  uid: aw-uid\n  annotations: {workload.codeflare.dev.appwrapper/retryLimit: '2'}\n", 1)
}

// What submit --wait and logs -f notice as a job fails, status tells after
// its pods are gone: the root cause of its last attempt first, the attempts
// before, and those no follower saw, once, with the remedies.
func TestStatusTellsWhyAJobFailed(t *testing.T) {
	failedPod := ptjPod("worker", 0, "w-2", `{name: pytorch, state: {terminated: {exitCode: 1, reason: Error, finishedAt: "2026-11-26T10:00:00Z",
    message: `+strconv.Quote(traceback)+`}}}`)
	client, next := timeline(t, retrying,
		[]string{"{phase: Running, resettingCount: 2, conditions: [{type: PodsReady, status: 'True'}]}", ptjPod("master", 0, "m-2", runningFor(0)), failedPod},
		[]string{"{phase: Failed, resettingCount: 2, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}"},
	)
	client.Keeper = &failure.Keeper{Dir: t.TempDir()}
	client.Poll = time.Millisecond
	ref := Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}
	var noticed []string
	last, err := client.Follow(context.Background(), ref, func(Status) { next() }, func(n Noticed) {
		require.NoError(t, n.NotKept)
		noticed = append(noticed, failure.Tell(n.Attempt, n.Of, n.Failure))
	})
	require.NoError(t, err)
	require.Equal(t, Failed, last.State)
	require.Equal(t, []string{`attempt 3 of 3: rank 3 (worker-0, local rank 1) exited 1: ZeroDivisionError: float division by zero
  | Traceback (most recent call last):
  |   File "/app/train.py", line 9, in <module>
  |     loss = scale(1.0, 0)
  | ZeroDivisionError: float division by zero`}, noticed)
	require.Equal(t, "AppWrapper demo: Failed (2 retries): FoundFailedPods; rank 3 (worker-0, local rank 1) exited 1: ZeroDivisionError: float division by zero", last.Line())

	// The pods are gone; attempt 1 was kept by another follower, attempt 2
	// by none.
	code := int32(137)
	_, err = client.Keeper.Keep(failure.Job{Cluster: client.Server, Namespace: "ml", Name: "demo", UID: "aw-uid"}, 1, 3,
		failure.Failure{Key: "m-1/pytorch/0", Pod: "demo-master-0", Member: "master-0", Container: "pytorch", Reason: "OOMKilled", ExitCode: &code})
	require.NoError(t, err)
	s, err := client.Status(context.Background(), ref)
	require.NoError(t, err)
	require.Equal(t, []int{2}, s.Unseen)
	require.Equal(t, `AppWrapper "demo" in namespace "ml": Failed (2 retries)
  cause:     attempt 3 of 3 failed: rank 3 (worker-0, local rank 1) exited 1: ZeroDivisionError: float division by zero; no retries left
             | Traceback (most recent call last):
             |   File "/app/train.py", line 9, in <module>
             |     loss = scale(1.0, 0)
             | ZeroDivisionError: float division by zero
  before:    attempt 1 of 3 failed: master-0 (container pytorch) ran out of memory (OOMKilled: killed for using more than its memory limit)
  unseen:    attempt 2 failed unseen: no generator followed the job then, and the pods that said why are gone; follow a job (submit --wait, logs -f) to keep why each attempt fails, or keep the pods of a failed attempt a while with failureGracePeriodDuration
  why:       FoundFailedPods
  pods:      ready 0/2
  queue:     LocalQueue team-a
`, s.Lines())

	// Deleted, the job's story goes with it.
	_, err = client.Delete(context.Background(), ref, false)
	require.NoError(t, err)
	story, err := client.Keeper.Story(failure.Job{Cluster: client.Server, Namespace: "ml", Name: "demo", UID: "aw-uid"})
	require.NoError(t, err)
	require.Empty(t, story.Attempts)
}

// A Warning event says a pod's node stopped answering; the follower notices
// it, as the node controller says nothing else of it in the pod.
func TestFollowNoticesANodeNotReady(t *testing.T) {
	var watched func()
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) { watched = watching(t, dyn, "events") },
		appWrapper("{phase: Running, conditions: [{type: PodsReady, status: 'True'}]}"),
		strings.Replace(ptjPod("worker", 0, "w-1", runningFor(0)), "spec: {", "spec: {nodeName: gpu-node-3, ", 1))
	client.Poll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	noticed := make(chan Noticed, 1)
	go client.Follow(ctx, Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(n Noticed) { noticed <- n })
	watched()
	event := object(t, `
apiVersion: v1
kind: Event
metadata: {name: demo-worker-0.1, namespace: ml}
type: Warning
reason: NodeNotReady
message: Node is not ready
lastTimestamp: "2026-11-26T10:00:00Z"
involvedObject: {kind: Pod, name: demo-worker-0, namespace: ml, uid: w-1}`)
	_, err := client.Dynamic.Resource(events).Namespace("ml").Create(ctx, event, metav1.CreateOptions{})
	require.NoError(t, err)
	select {
	case n := <-noticed:
		require.Equal(t, 1, n.Attempt)
		require.Equal(t, "worker-0 was lost with its node gpu-node-3, which stopped answering (NodeNotReady)", n.Failure.String())
	case <-time.After(5 * time.Second):
		t.Fatal("the node's failure was not noticed")
	}
}

// watching opens the fake's watches of a resource as the fake does, and
// gives a wait for the first to be open: what a test changes after that
// wait, the watch is told, however slow the machine.
func watching(t *testing.T, dyn *dynamicfake.FakeDynamicClient, resource string) (wait func()) {
	open := make(chan struct{})
	var once sync.Once
	dyn.PrependWatchReactor(resource, func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := dyn.Tracker().Watch(action.GetResource(), action.GetNamespace(), action.(clienttesting.WatchActionImpl).ListOptions)
		once.Do(func() { close(open) })
		return true, w, err
	})
	return func() {
		select {
		case <-open:
		case <-time.After(10 * time.Second):
			t.Fatalf("nothing watched the %s", resource)
		}
	}
}
