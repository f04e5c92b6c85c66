package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/failure"
)

// timeline plays a job's life: each reading of the job demo (job, of a
// status) moves the cluster to the next of steps (the job's status, and its
// pods), and stays at the last.
func timeline(t *testing.T, job func(status string) string, steps ...[]string) func(*dynamicfake.FakeDynamicClient) {
	resource := Ref{Kind: object(t, job("{}")).GetKind()}.resource()
	return func(dyn *dynamicfake.FakeDynamicClient) {
		next := 0
		dyn.PrependReactor("get", resource.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
			step := steps[min(next, len(steps)-1)]
			next++
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
			return false, nil, nil
		})
	}
}

func TestFollowUntilItFails(t *testing.T) {
	failedPod := pod("demo-worker-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 2, reason: Error}}}]}`)
	client := cluster(t, timeline(t, appWrapper,
		[]string{"{phase: Suspended}"},
		[]string{"{phase: Suspended}"},
		[]string{"{phase: Running}", pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, "{phase: Pending}")},
		[]string{"{phase: Running, conditions: [{type: PodsReady, status: 'True'}]}", pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod)},
		[]string{"{phase: Resetting, resettingCount: 1, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}", failedPod},
		// The controller deleted the pods.
		[]string{"{phase: Failed, resettingCount: 1, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}"},
	), appWrapper("{}"))
	client.Poll = time.Millisecond
	var lines []string
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(s Status) {
		lines = append(lines, s.Line())
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

// A pod that fails and is deleted between two readings is seen all the same,
// by the watch on the job's pods.
func TestFollowSeesAPodThatFailsBetweenReadings(t *testing.T) {
	failedPod := pod("demo-worker-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 3, reason: Error}}}]}`)
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		readings := 0
		dyn.PrependReactor("get", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) {
			tracker := dyn.Tracker()
			switch readings++; readings {
			case 2:
				// After this reading: the pod fails, and the AppWrapper
				// controller deletes it.
				require.NoError(t, tracker.Create(pods, object(t, failedPod), "ml"))
				require.NoError(t, tracker.Delete(pods, "ml", "demo-worker-0"))
			case 3:
				require.NoError(t, tracker.Update(appWrappers, object(t, appWrapper("{phase: Failed}")), "ml"))
			}
			return false, nil, nil
		})
	}, appWrapper("{phase: Running}"))
	client.Poll = time.Millisecond
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(Noticed) {})
	require.NoError(t, err)
	require.Equal(t, "AppWrapper demo: Failed; pod demo-worker-0 (container pytorch) exited 3", last.Line())
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
	client := cluster(t, timeline(t, appWrapper, []string{"{phase: Running}"}, failed), appWrapper("{}"))
	client.Poll = time.Millisecond
	source := &fakeLogs{}
	client.LogSource = source
	client.Keeper = &failure.Keeper{Dir: t.TempDir()}
	var told []string
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(n Noticed) {
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
	client := cluster(t, timeline(t, appWrapper,
		[]string{"{phase: Running, conditions: [{type: PodsReady, status: 'True'}]}", pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod)},
		[]string{"{phase: Succeeded}", pod("demo-master-0", awPods, "{phase: Succeeded}"), pod("demo-worker-0", awPods, "{phase: Succeeded}")},
	), appWrapper("{}"))
	client.Poll = time.Millisecond
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(Noticed) {})
	require.NoError(t, err)
	require.Equal(t, "AppWrapper demo: Succeeded, pods succeeded 2/2", last.Line())
}

// Ctrl-C, or the timeout, ends the following, not the job.
func TestFollowUntilTheContextEnds(t *testing.T) {
	client := cluster(t, nil, appWrapper("{phase: Running}"))
	client.Poll = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	readings := 0
	last, err := client.Follow(ctx, Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {
		if readings++; readings == 3 {
			cancel()
		}
	}, func(Noticed) {})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, Admitted, last.State)
	require.Equal(t, 3, readings)
}

func TestFollowAJobThatIsDeleted(t *testing.T) {
	client := cluster(t, nil)
	_, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(Noticed) {})
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" was deleted while it was followed`)
}

// Readings the cluster does not answer are tried again, less and less
// often, for as long as Client.Outage says; the follower says once that the
// cluster is lost, and once that it is back. Past the outage, it gives up.
func TestFollowThroughAnOutage(t *testing.T) {
	for _, tc := range []struct {
		missed  int
		wantErr bool
		want    []string
	}{
		{missed: 3, want: []string{"lost: connection refused", "back"}},
		{missed: 1 << 30, wantErr: true, want: []string{"lost: connection refused"}},
	} {
		var asked []time.Time
		client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor("get", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) {
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
			// Less and less often: the gaps double, from Poll.
			require.Less(t, len(asked), 20)
		} else {
			require.NoError(t, err)
			require.Equal(t, Succeeded, last.State)
		}
	}
}

func TestFollowABareJobSet(t *testing.T) {
	client := cluster(t, timeline(t, func(status string) string { return jobSet(false, status) },
		[]string{jobSetSuspended},
		[]string{jobSetResumed, pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, "{phase: Pending}")},
		[]string{jobSetResumed, pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, readyPod)},
		[]string{"{conditions: [{type: Completed, status: 'True', reason: AllJobsCompleted}]}",
			pod("demo-node-0-0", jobSetPods, "{phase: Succeeded}"), pod("demo-node-0-1", jobSetPods, "{phase: Succeeded}")},
	), jobSet(true, "{}"))
	client.Poll = time.Millisecond
	var lines []string
	last, err := client.Follow(context.Background(), Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"}, func(s Status) {
		lines = append(lines, s.Line())
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

// A TrainJob's pods are watched by its JobSet's label: one that fails and
// is deleted between two readings is seen all the same.
func TestFollowATrainJobWhosePodFailsBetweenReadings(t *testing.T) {
	failedPod := pod("demo-node-0-1", jobSetPods, `{phase: Failed, containerStatuses: [{name: node, state: {terminated: {exitCode: 3, reason: Error}}}]}`)
	failed := `{conditions: [{type: Failed, status: 'True', reason: FailedJobs, message: "jobset failed due to one or more job failures (first failed job: demo-node-0)"}]}`
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		readings := 0
		dyn.PrependReactor("get", "trainjobs", func(clienttesting.Action) (bool, runtime.Object, error) {
			tracker := dyn.Tracker()
			switch readings++; readings {
			case 2:
				require.NoError(t, tracker.Create(pods, object(t, failedPod), "ml"))
				require.NoError(t, tracker.Delete(pods, "ml", "demo-node-0-1"))
			case 3:
				require.NoError(t, tracker.Update(trainJobs, object(t, trainJob(false, failed)), "ml"))
			}
			return false, nil, nil
		})
	}, trainJob(false, "{}"))
	client.Poll = time.Millisecond
	last, err := client.Follow(context.Background(), Ref{Kind: "TrainJob", Namespace: "ml", Name: "demo"}, func(Status) {}, func(Noticed) {})
	require.NoError(t, err)
	require.Equal(t, "TrainJob demo: Failed: FailedJobs: jobset failed due to one or more job failures (first failed job: demo-node-0); pod demo-node-0-1 (container node) exited 3", last.Line())
}

// After an outage, the watch of the pods is opened again from the last
// version it saw; when that version is gone (410), the pods are listed
// again, and a failure that happened meanwhile is noticed from the pod that
// still shows it.
func TestFollowNoticesAFailureAfterAnOutage(t *testing.T) {
	failed := pod("demo-worker-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 3, reason: Error}}}]}`)
	first := watch.NewFake()
	watched := make(chan struct{})
	back := make(chan struct{})
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		watches := 0
		dyn.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
			switch watches++; watches {
			case 1:
				close(watched)
				return true, first, nil
			case 2:
				return true, nil, apierrors.NewResourceExpired("too old resource version")
			}
			return false, nil, nil
		})
		readings := 0
		dyn.PrependReactor("get", "appwrappers", func(clienttesting.Action) (bool, runtime.Object, error) {
			switch readings++; {
			case readings == 2:
				// The cluster goes away: the pod fails meanwhile, and the
				// watch ends.
				<-watched
				require.NoError(t, dyn.Tracker().Update(pods, object(t, failed), "ml"))
				first.Stop()
				close(back)
				fallthrough
			case readings == 3:
				return true, nil, &url.Error{Op: "Get", URL: "https://fake", Err: errors.New("connection refused")}
			case readings > 3:
				<-back
				require.NoError(t, dyn.Tracker().Update(appWrappers, object(t, appWrapper("{phase: Failed}")), "ml"))
			}
			return false, nil, nil
		})
	}, appWrapper("{phase: Running}"), pod("demo-worker-0", awPods, readyPod))
	client.Poll = 5 * time.Millisecond
	var said []string
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(n Noticed) {
		switch {
		case n.Lost != nil && n.Lost.Back:
			said = append(said, "back")
		case n.Lost != nil:
			said = append(said, "lost")
		default:
			said = append(said, n.Failure.String())
		}
	})
	require.NoError(t, err)
	require.Equal(t, Failed, last.State)
	require.Contains(t, said, "pod demo-worker-0 (container pytorch) exited 3")
	require.Equal(t, []string{"lost", "back"}, slices.DeleteFunc(slices.Clone(said), func(s string) bool { return s != "lost" && s != "back" }))
}
