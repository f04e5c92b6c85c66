package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/failure"
)

// timeline plays a job's life in a fake cluster: the job demo (job, of a
// status) and its pods are the first of steps (the job's status, then its
// pods); each call of next moves them to the next step, and stays at the
// last. A follower that calls next as it reports moves the job on at each
// reading: what the watches tell is in by the next.
func timeline(t *testing.T, job func(status string) string, steps ...[]string) (client *Client, next func()) {
	resource := Ref{Kind: object(t, job("{}")).GetKind()}.resource()
	var dyn *dynamicfake.FakeDynamicClient
	client = cluster(t, func(d *dynamicfake.FakeDynamicClient) { dyn = d }, append([]string{job(steps[0][0])}, steps[0][1:]...)...)
	at := 0
	return client, func() {
		at = min(at+1, len(steps)-1)
		step := steps[at]
		tracker := dyn.Tracker()
		list, err := tracker.List(pods, pods.GroupVersion().WithKind("Pod"), "ml")
		require.NoError(t, err)
		for _, item := range list.(*unstructured.UnstructuredList).Items {
			require.NoError(t, tracker.Delete(pods, "ml", item.GetName()))
		}
		require.NoError(t, tracker.Update(resource, object(t, job(step[0])), "ml"))
		for _, p := range step[1:] {
			require.NoError(t, tracker.Create(pods, object(t, p), "ml"))
		}
	}
}

func TestFollowUntilItFails(t *testing.T) {
	failedPod := pod("demo-worker-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 2, reason: Error}}}]}`)
	client, next := timeline(t, appWrapper,
		[]string{"{phase: Suspended}"},
		[]string{"{phase: Suspended}"},
		[]string{"{phase: Running}", pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, "{phase: Pending}")},
		[]string{"{phase: Running, conditions: [{type: PodsReady, status: 'True'}]}", pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod)},
		[]string{"{phase: Resetting, resettingCount: 1, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}", failedPod},
		// The controller deleted the pods.
		[]string{"{phase: Failed, resettingCount: 1, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}"},
	)
	client.Poll = time.Millisecond
	var lines []string
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(s Status) {
		lines = append(lines, s.Line())
		next()
	}, func(Noticed) {})
	require.NoError(t, err)
	require.Equal(t, Failed, last.State)
	require.Equal(t, []string{
		"AppWrapper demo: Queued in LocalQueue team-a: Kueue has not made a Workload for it yet",
		"AppWrapper demo: Queued in LocalQueue team-a: Kueue has not made a Workload for it yet",
		"AppWrapper demo: Admitted, pods ready 1/2",
		"AppWrapper demo: Running, pods ready 2/2",
		"AppWrapper demo: Admitted (Resetting, 1 retry), pods ready 0/2: FoundFailedPods; pod demo-worker-0 (container pytorch) exited 2",
		"AppWrapper demo: Failed (1 retry): FoundFailedPods; pod demo-worker-0 (container pytorch) exited 2",
	}, lines)
}

// A pod that fails and is deleted between two readings is seen all the
// same, by the watch on the job's pods: an AppWrapper's by its label, a
// TrainJob's by its JobSet's.
func TestFollowSeesAPodThatFailsBetweenReadings(t *testing.T) {
	for _, tc := range []struct {
		ref       Ref
		resource  schema.GroupVersionResource
		job       func(failed bool) string
		pod, name string
		want      string
	}{{
		ref: Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, resource: appWrappers,
		job: func(failed bool) string {
			return appWrapper(map[bool]string{false: "{phase: Running}", true: "{phase: Failed}"}[failed])
		},
		pod: pod("demo-worker-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 3, reason: Error}}}]}`), name: "demo-worker-0",
		want: "AppWrapper demo: Failed; pod demo-worker-0 (container pytorch) exited 3",
	}, {
		ref: Ref{Kind: "TrainJob", Namespace: "ml", Name: "demo"}, resource: trainJobs,
		job: func(failed bool) string {
			return trainJob(false, map[bool]string{false: "{}", true: `{conditions: [{type: Failed, status: 'True', reason: FailedJobs, message: "jobset failed due to one or more job failures (first failed job: demo-node-0)"}]}`}[failed])
		},
		pod: pod("demo-node-0-1", jobSetPods, `{phase: Failed, containerStatuses: [{name: node, state: {terminated: {exitCode: 3, reason: Error}}}]}`), name: "demo-node-0-1",
		want: "TrainJob demo: Failed: FailedJobs: jobset failed due to one or more job failures (first failed job: demo-node-0); pod demo-node-0-1 (container node) exited 3",
	}} {
		t.Run(tc.ref.Kind, func(t *testing.T) {
			var dyn *dynamicfake.FakeDynamicClient
			client := cluster(t, func(d *dynamicfake.FakeDynamicClient) { dyn = d }, tc.job(false))
			client.Poll = time.Millisecond
			readings := 0
			last, err := client.Follow(context.Background(), tc.ref, func(Status) {
				tracker := dyn.Tracker()
				switch readings++; readings {
				case 1:
					// After this reading: the pod fails, and its
					// controller deletes it.
					require.NoError(t, tracker.Create(pods, object(t, tc.pod), "ml"))
					require.NoError(t, tracker.Delete(pods, "ml", tc.name))
				case 2:
					require.NoError(t, tracker.Update(tc.resource, object(t, tc.job(true)), "ml"))
				}
			}, func(Noticed) {})
			require.NoError(t, err)
			require.Equal(t, tc.want, last.Line())
		})
	}
}

// When many pods fail at once, the first few are told, with their lines,
// then once that more fail; all of them are kept, the root cause among
// them; and the logs of the first few alone are read.
func TestFollowTellsTheFirstFailuresOfManyPods(t *testing.T) {
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	failed := []string{"{phase: Failed}"}
	for i := range 20 {
		at := start.Add(time.Duration(20-i) * time.Second).Format(time.RFC3339)
		name := fmt.Sprintf("demo-worker-%d", i)
		failed = append(failed, strings.Replace(pod(name, awPods, fmt.Sprintf(`{phase: Failed, containerStatuses: [{name: pytorch,
  state: {terminated: {exitCode: 1, reason: Error, finishedAt: '%s', message: "worker %d failed"}}}]}`, at, i)), "name: "+name, "name: "+name+", uid: u"+name, 1))
	}
	client, next := timeline(t, appWrapper, []string{"{phase: Running}"}, failed)
	client.Poll = time.Millisecond
	source := &fakeLogs{}
	client.LogSource = source
	client.Keeper = &failure.Keeper{Dir: t.TempDir()}
	var told []string
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) { next() }, func(n Noticed) {
		if n.More {
			told = append(told, "more")
		} else {
			told = append(told, n.Failure.Pod)
		}
	})
	require.NoError(t, err)
	require.Equal(t, Failed, last.State)
	require.Len(t, told, failure.WithLines+1)
	require.Equal(t, "more", told[failure.WithLines])
	require.Len(t, source.asked, failure.WithLines, "the logs read")
	story, err := client.Keeper.Story(failure.Job{Cluster: client.Server, Namespace: "ml", Name: "demo", UID: "aw-uid"})
	require.NoError(t, err)
	require.Len(t, story.Attempts, 1)
	require.Len(t, story.Attempts[0].Failures, 20)
	root, ok := story.Attempts[0].Root()
	require.True(t, ok)
	require.Equal(t, "demo-worker-19", root.Pod, "the first to end")
}

func TestFollowUntilItSucceeds(t *testing.T) {
	client, next := timeline(t, appWrapper,
		[]string{"{phase: Running, conditions: [{type: PodsReady, status: 'True'}]}", pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod)},
		[]string{"{phase: Succeeded}", pod("demo-master-0", awPods, "{phase: Succeeded}"), pod("demo-worker-0", awPods, "{phase: Succeeded}")},
	)
	client.Poll = time.Millisecond
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) { next() }, func(Noticed) {})
	require.NoError(t, err)
	require.Equal(t, "AppWrapper demo: Succeeded, pods succeeded 2/2", last.Line())
}

// Ctrl-C, or the timeout, ends the following, not the job. A job that does
// not change is read once: the follower asks nothing more of the cluster
// than the lists and watches of the job, its Workload, its pods and their
// events, whatever the time it follows it.
func TestFollowUntilTheContextEnds(t *testing.T) {
	var dyn *dynamicfake.FakeDynamicClient
	client := cluster(t, func(d *dynamicfake.FakeDynamicClient) { dyn = d }, appWrapper("{phase: Running}"), workloadOwnedBy("aw-uid", admittedWL))
	client.Poll = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	readings := 0
	last, err := client.Follow(ctx, Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) { readings++ }, func(Noticed) {})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, Admitted, last.State)
	require.Equal(t, 1, readings)
	asked := map[string]int{}
	for _, a := range dyn.Actions() {
		r := a.GetResource()
		asked[a.GetVerb()+" "+r.Resource+"/"+r.Version]++
	}
	// Kueue's newest version first (the fake serves v1beta1 alone).
	require.Equal(t, map[string]int{"list appwrappers/v1beta2": 1, "watch appwrappers/v1beta2": 1,
		"list workloads/v1beta2": 1, "list workloads/v1beta1": 1, "watch workloads/v1beta1": 1,
		"list pods/v1": 1, "watch pods/v1": 1, "list events/v1": 1, "watch events/v1": 1}, asked)
}

func TestFollowAJobThatIsDeleted(t *testing.T) {
	client := cluster(t, nil)
	_, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(Noticed) {})
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" was deleted while it was followed`)
}

// A job the cluster does not answer for is listed again and again (the
// watch of the job tries again, less and less often), for as long as
// Client.Outage says; the follower says once that the cluster is lost, and
// once that it is back. Past the outage, it gives up.
func TestFollowThroughAnOutage(t *testing.T) {
	for _, tc := range []struct {
		missed  int
		wantErr bool
		want    []string
	}{
		{missed: 1, want: []string{"lost: connection refused", "back"}},
		{missed: 1 << 30, wantErr: true, want: []string{"lost: connection refused"}},
	} {
		var asked []time.Time
		client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor("list", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) {
				if asked = append(asked, time.Now()); len(asked) <= tc.missed {
					return true, nil, &url.Error{Op: "Get", URL: "https://fake", Err: errors.New("connection refused")}
				}
				return false, nil, nil
			})
		}, appWrapper("{phase: Succeeded}"))
		client.Poll, client.Outage = time.Millisecond, 200*time.Millisecond
		var said []string
		last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(n Noticed) {
			switch {
			case n.Lost == nil:
			case n.Lost.Back:
				said = append(said, "back")
			default:
				require.Equal(t, client.Outage, n.Lost.Until.Sub(n.Lost.Since))
				said = append(said, "lost: "+n.Lost.Err.Error())
			}
		})
		require.Equal(t, tc.want, said)
		if tc.wantErr {
			require.ErrorAs(t, err, &Unreachable{})
			require.GreaterOrEqual(t, asked[len(asked)-1].Sub(asked[0]), client.Outage)
			// A second after the first, not at once.
			require.Len(t, asked, 2)
		} else {
			require.NoError(t, err)
			require.Equal(t, Succeeded, last.State)
		}
	}
}

func TestFollowABareJobSet(t *testing.T) {
	client, next := timeline(t, func(status string) string { return jobSet(false, status) },
		[]string{jobSetSuspended},
		[]string{jobSetResumed, pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, "{phase: Pending}")},
		[]string{jobSetResumed, pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, readyPod)},
		[]string{"{conditions: [{type: Completed, status: 'True', reason: AllJobsCompleted}]}",
			pod("demo-node-0-0", jobSetPods, "{phase: Succeeded}"), pod("demo-node-0-1", jobSetPods, "{phase: Succeeded}")},
	)
	client.Poll = time.Millisecond
	var lines []string
	last, err := client.Follow(context.Background(), Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"}, func(s Status) {
		lines = append(lines, s.Line())
		next()
	}, func(Noticed) {})
	require.NoError(t, err)
	require.Equal(t, Succeeded, last.State)
	require.Equal(t, []string{
		"JobSet demo: Queued in LocalQueue team-a: Kueue has not made a Workload for it yet",
		"JobSet demo: Admitted, pods ready 1/2",
		"JobSet demo: Running, pods ready 2/2",
		"JobSet demo: Succeeded, pods succeeded 2/2",
	}, lines)
}

// When the cluster goes away, the watches end, and the follower lists the
// job (and the pods) again until the cluster answers: it says once that
// the cluster is lost and once that it is back, and a failure that
// happened meanwhile is noticed from the pod that still shows it.
func TestFollowNoticesAFailureAfterAnOutage(t *testing.T) {
	failed := pod("demo-worker-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 3, reason: Error}}}]}`)
	first := map[string]*watch.FakeWatcher{"appwrappers": watch.NewFake(), "pods": watch.NewFake()}
	var down atomic.Bool
	var dyn *dynamicfake.FakeDynamicClient
	client := cluster(t, func(d *dynamicfake.FakeDynamicClient) {
		dyn = d
		for resource, w := range first {
			watched := false
			d.PrependWatchReactor(resource, func(clienttesting.Action) (bool, watch.Interface, error) {
				if watched {
					return false, nil, nil
				}
				watched = true
				return true, w, nil
			})
		}
		d.PrependReactor("list", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) {
			if down.Load() {
				return true, nil, &url.Error{Op: "Get", URL: "https://fake", Err: errors.New("connection refused")}
			}
			return false, nil, nil
		})
	}, appWrapper("{phase: Running}"), pod("demo-worker-0", awPods, readyPod))
	client.Poll = 5 * time.Millisecond
	var said []string
	readings := 0
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {
		if readings++; readings == 1 {
			// The cluster goes away: the pod fails meanwhile, and the
			// watches end.
			down.Store(true)
			require.NoError(t, dyn.Tracker().Update(pods, object(t, failed), "ml"))
			for _, w := range first {
				w.Stop()
			}
		}
	}, func(n Noticed) {
		switch {
		case n.Lost != nil && n.Lost.Back:
			said = append(said, "back")
		case n.Lost != nil:
			said = append(said, "lost")
			// It answers again; the job has failed meanwhile.
			require.NoError(t, dyn.Tracker().Update(appWrappers, object(t, appWrapper("{phase: Failed}")), "ml"))
			down.Store(false)
		default:
			said = append(said, n.Failure.String())
		}
	})
	require.NoError(t, err)
	require.Equal(t, Failed, last.State)
	require.Contains(t, said, "pod demo-worker-0 (container pytorch) exited 3")
	require.Equal(t, []string{"lost", "back"}, slices.DeleteFunc(slices.Clone(said), func(s string) bool { return s != "lost" && s != "back" }))
}
