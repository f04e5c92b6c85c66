package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// marked marks a job as the generator's (its annotation), created at a time.
func marked(job, name, uid string) string {
	job = strings.Replace(job, "name: demo\n  namespace: ml", "name: "+name+"\n  namespace: ml\n  creationTimestamp: '2026-01-01T10:00:00Z'\n  annotations: {torchwrap.dev/generator-version: 0.1.0}", 1)
	return strings.Replace(job, "uid: aw-uid", "uid: "+uid, 1)
}

// workloadNamed is a Workload of a job's uid, named, with a status.
func workloadNamed(name, uid, status string) string {
	return strings.Replace(workloadOwnedBy(uid, status), "name: appwrapper-demo-7d9f2", "name: "+name, 1)
}

// held is a job Kueue holds (its webhook suspends a job in a LocalQueue
// until it admits it).
func held(job string) string {
	return strings.Replace(job, "\nspec:\n", "\nspec:\n  suspend: true\n", 1)
}

// listed is a cluster of jobs the generator made, of each state, and of
// others.
func listed(t *testing.T, react func(*dynamicfake.FakeDynamicClient)) *Client {
	aw := func(name, uid, status string) string { return marked(appWrapper(status), name, uid) }
	return cluster(t, react,
		held(aw("queued", "q-uid", "{phase: Suspended}")), workloadNamed("appwrapper-queued-1", "q-uid", pendingWL),
		aw("running", "r-uid", "{phase: Running, resettingCount: 2, conditions: [{type: PodsReady, status: 'True'}]}"),
		workloadNamed("appwrapper-running-1", "r-uid", admittedWL),
		strings.Replace(pod("running-master-0", "{workload.codeflare.dev/appwrapper: running}", readyPod), "status: {", "status: {containerStatuses: [{name: pytorch, restartCount: 3}], ", 1),
		pod("running-worker-0", "{workload.codeflare.dev/appwrapper: running}", readyPod),
		held(aw("stopped", "s-uid", "{phase: Suspended}")),
		strings.Replace(workloadNamed("appwrapper-stopped-1", "s-uid", "{conditions: [{type: Evicted, status: 'True', reason: Deactivated}]}"),
			"spec: {queueName: team-a}", "spec: {queueName: team-a, active: false}", 1),
		// The component the AppWrapper running made: part of it.
		`{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: running, namespace: ml, annotations: {torchwrap.dev/generator-version: 0.1.0},
  ownerReferences: [{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, name: running, uid: r-uid, controller: true}]}}`,
		// A job someone else made.
		strings.Replace(trainJob(false, "{conditions: [{type: Complete, status: 'True'}]}"), "name: demo", "name: theirs", 1),
	)
}

func TestList(t *testing.T) {
	var visibility int
	client := listed(t, func(dyn *dynamicfake.FakeDynamicClient) {
		pendingWorkloads(dyn)
		dyn.PrependReactor("get", "localqueues", func(clienttesting.Action) (bool, runtime.Object, error) {
			visibility++
			return false, nil, nil
		})
	})
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Empty(t, list.Notes)
	require.Equal(t, 1, visibility, "one question to the visibility API for the one LocalQueue with queued jobs")
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	require.Equal(t, `NAME      KIND         STATE       QUEUE    POSITION   PODS   GPUS   RESTARTS   AGE
queued    AppWrapper   Queued      team-a   -          0/2    0      0          120m
running   AppWrapper   Running     team-a   -          2/2    0      2          120m
stopped   AppWrapper   Suspended   team-a   -          0/2    0      0          120m
`, list.Table(false, false, now))
	list, err = client.List(context.Background(), ListOptions{Namespace: "ml", Why: true})
	require.NoError(t, err)
	require.Equal(t, `NAMESPACE   NAME      KIND         STATE       QUEUE    POSITION   PODS   GPUS   RESTARTS   AGE    CLUSTERQUEUE   WORKLOAD               POD-RESTARTS   WHY
ml          queued    AppWrapper   Queued      team-a   -          0/2    0      0          120m   -              appwrapper-queued-1    0              Pending: couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed
ml          running   AppWrapper   Running     team-a   -          2/2    0      2          120m   team-a-cq      appwrapper-running-1   3              -
ml          stopped   AppWrapper   Suspended   team-a   -          0/2    0      0          120m   -              appwrapper-stopped-1   0              Deactivated: its Kueue Workload appwrapper-stopped-1 is inactive (spec.active: false); generator resume stopped -n ml queues it again
`, list.Table(true, true, now))
}

// Kueue's visibility API gives the positions of the queued jobs.
func TestListPositions(t *testing.T) {
	client := listed(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("get", "localqueues", func(action clienttesting.Action) (bool, runtime.Object, error) {
			return true, object(t, `{apiVersion: visibility.kueue.x-k8s.io/v1beta1, kind: PendingWorkloadsSummary,
  items: [{metadata: {name: appwrapper-queued-1}, positionInLocalQueue: 3}]}`), nil
		})
	})
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml", States: []State{Queued}})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 1)
	require.Equal(t, int64(4), list.Jobs[0].Position)
}

// queueOf answers Kueue's visibility API for LocalQueue team-a: n
// Workloads pending, the i-th of them owned by the job of uids[i] (the
// rest by other jobs), and how many times it was asked.
func queueOf(n int, uids ...string) (func(*dynamicfake.FakeDynamicClient), *int) {
	asked := 0
	return func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("get", "localqueues", func(action clienttesting.Action) (bool, runtime.Object, error) {
			asked++
			var items []any
			for i := range n {
				uid := fmt.Sprintf("other-%d", i)
				if i < len(uids) {
					uid = uids[i]
				}
				items = append(items, map[string]any{"positionInLocalQueue": int64(i), "metadata": map[string]any{
					"name": "appwrapper-" + uid, "namespace": "ml", "ownerReferences": []any{map[string]any{"kind": "AppWrapper", "uid": uid}}}})
			}
			return true, &unstructured.Unstructured{Object: map[string]any{"items": items}}, nil
		})
	}, &asked
}

// workloadsListed is how many times the client listed Kueue's Workloads.
func workloadsListed(client *Client) int {
	return len(workloadSelectors(client))
}

// workloadSelectors are the label selectors of the client's lists of
// Kueue's Workloads.
func workloadSelectors(client *Client) []string {
	var selectors []string
	for _, a := range client.Dynamic.(*dynamicfake.FakeDynamicClient).Actions() {
		if list, ok := a.(clienttesting.ListAction); ok && a.GetResource().Resource == "workloads" {
			selectors = append(selectors, list.GetListRestrictions().Labels.String())
		}
	}
	return selectors
}

// The visibility API says all that the lines of queued and running jobs
// need: their Workloads, which hold the jobs' pod templates again, are not
// read. A stopped job's line needs its own, and so do the lines that say
// why.
func TestListReadsTheWorkloadsWhereALineNeedsThem(t *testing.T) {
	aw := func(name, uid, status string) string { return marked(appWrapper(status), name, uid) }
	jobs := []string{
		held(aw("first", "f-uid", "{phase: Suspended}")), workloadNamed("appwrapper-f-uid", "f-uid", pendingWL),
		held(aw("second", "s-uid", "{phase: Suspended}")), workloadNamed("appwrapper-s-uid", "s-uid", pendingWL),
		aw("running", "r-uid", "{phase: Running, conditions: [{type: PodsReady, status: 'True'}]}"), workloadNamed("appwrapper-r-uid", "r-uid", admittedWL),
	}
	react, _ := queueOf(3, "s-uid", "f-uid")
	client := cluster(t, react, jobs...)
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Empty(t, list.Notes)
	require.Zero(t, workloadsListed(client))
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	require.Equal(t, `NAME      KIND         STATE     QUEUE    POSITION   PODS   GPUS   RESTARTS   AGE
first     AppWrapper   Queued    team-a   2          0/2    0      0          120m
running   AppWrapper   Running   team-a   -          0/2    0      0          120m
second    AppWrapper   Queued    team-a   1          0/2    0      0          120m
`, list.Table(false, false, now))
	require.Equal(t, "appwrapper-f-uid", list.Jobs[0].Workload)
	require.Empty(t, list.Jobs[0].Message, "its conditions were not read")

	list, err = client.List(context.Background(), ListOptions{Namespace: "ml", Why: true})
	require.NoError(t, err)
	require.Equal(t, 2, workloadsListed(client), "Kueue's v1beta2 (not served here), then v1beta1")
	require.Equal(t, int64(2), list.Jobs[0].Position)
	require.Equal(t, "Pending", list.Jobs[0].Reason)
	require.Equal(t, "team-a-cq", list.Jobs[1].ClusterQueue)

	client = cluster(t, react, append(jobs, held(aw("stopped", "x-uid", "{phase: Suspended}")),
		strings.Replace(workloadNamed("appwrapper-x-uid", "x-uid", "{conditions: [{type: Evicted, status: 'True', reason: Deactivated}]}"),
			"spec: {queueName: team-a}", "spec: {queueName: team-a, active: false}", 1))...)
	list, err = client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Equal(t, []string{"kueue.x-k8s.io/job-uid in (x-uid)", "kueue.x-k8s.io/job-uid in (x-uid)"}, workloadSelectors(client),
		"the stopped job's alone (v1beta2, then v1beta1)")
	require.Equal(t, `NAME      KIND         STATE       QUEUE    POSITION   PODS   GPUS   RESTARTS   AGE
first     AppWrapper   Queued      team-a   2          0/2    0      0          120m
running   AppWrapper   Running     team-a   -          0/2    0      0          120m
second    AppWrapper   Queued      team-a   1          0/2    0      0          120m
stopped   AppWrapper   Suspended   team-a   -          0/2    0      0          120m
`, list.Table(false, false, now))
}

// A job Kueue manages without a LocalQueue (manageJobsWithoutQueueName)
// is queued by its Workload, which no queue lists: its line reads it.
func TestListOfAJobWithoutAQueue(t *testing.T) {
	job := strings.Replace(held(marked(appWrapper("{phase: Suspended}"), "unqueued", "u-uid")), "labels: {kueue.x-k8s.io/queue-name: team-a}", "labels: {}", 1)
	wl := strings.Replace(workloadNamed("appwrapper-u-uid", "u-uid", pendingWL), "spec: {queueName: team-a}", "spec: {}", 1)
	client := cluster(t, nil, job, wl)
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Equal(t, []string{"kueue.x-k8s.io/job-uid in (u-uid)", "kueue.x-k8s.io/job-uid in (u-uid)"}, workloadSelectors(client))
	require.Len(t, list.Jobs, 1)
	require.Equal(t, Queued, list.Jobs[0].State)
	require.Equal(t, "appwrapper-u-uid", list.Jobs[0].Workload)
}

// More jobs that need their Workloads than a label selector holds: all
// the Workloads are listed.
func TestListWorkloadsOfManyStoppedJobs(t *testing.T) {
	var jobs []string
	for i := range fewWorkloads + 1 {
		uid := fmt.Sprintf("uid-%d", i)
		jobs = append(jobs, held(marked(appWrapper("{phase: Suspended}"), fmt.Sprintf("stopped-%d", i), uid)),
			strings.Replace(workloadNamed("appwrapper-"+uid, uid, "{conditions: [{type: Evicted, status: 'True', reason: Deactivated}]}"),
				"spec: {queueName: team-a}", "spec: {queueName: team-a, active: false}", 1))
	}
	react, _ := queueOf(0)
	client := cluster(t, react, jobs...)
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Equal(t, []string{"", ""}, workloadSelectors(client))
	require.Len(t, list.Jobs, fewWorkloads+1)
	for _, s := range list.Jobs {
		require.Equal(t, Suspended, s.State, s.Name)
	}
}

// The visibility API answers a thousand Workloads at a time: a job further
// back in its queue has its position too.
func TestListPositionsPastAThousand(t *testing.T) {
	uids := make([]string, 1500)
	uids[1234] = "q-uid"
	for i := range uids {
		uids[i] = cmp.Or(uids[i], fmt.Sprintf("other-%d", i))
	}
	react, asked := queueOf(len(uids), uids...)
	client := cluster(t, react, held(marked(appWrapper("{phase: Suspended}"), "queued", "q-uid")), workloadNamed("appwrapper-q-uid", "q-uid", pendingWL))
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Equal(t, 2, *asked, "two pages")
	require.Zero(t, workloadsListed(client))
	require.Len(t, list.Jobs, 1)
	require.Equal(t, int64(1235), list.Jobs[0].Position)
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "queued"})
	require.NoError(t, err)
	require.Equal(t, int64(1235), s.Position)
	require.Equal(t, 4, *asked, "the status of one job: the pages up to its own")

	// The status of a job on the first page: that page alone.
	uids[1234], uids[12] = uids[12], uids[1234]
	react, asked = queueOf(len(uids), uids...)
	client = cluster(t, react, held(marked(appWrapper("{phase: Suspended}"), "queued", "q-uid")), workloadNamed("appwrapper-q-uid", "q-uid", pendingWL))
	s, err = client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "queued"})
	require.NoError(t, err)
	require.Equal(t, int64(13), s.Position)
	require.Equal(t, 1, *asked)
}

// Without Kueue's visibility API, the positions are not known, and a note
// says so.
func TestListWithoutVisibility(t *testing.T) {
	client := listed(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("get", "localqueues", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "visibility.kueue.x-k8s.io", Resource: "localqueues"}, "team-a")
		})
	})
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Equal(t, []string{`positions in the queues: Kueue's visibility API (visibility.kueue.x-k8s.io/v1beta1) does not answer: localqueues.visibility.kueue.x-k8s.io "team-a" not found`}, list.Notes)
}

func TestListFilters(t *testing.T) {
	client := listed(t, nil)
	for _, tc := range []struct {
		opts ListOptions
		want []string
	}{
		{ListOptions{Namespace: "ml"}, []string{"AppWrapper queued", "AppWrapper running", "AppWrapper stopped"}},
		{ListOptions{Namespace: "ml", Everyone: true}, []string{"AppWrapper queued", "AppWrapper running", "AppWrapper stopped", "TrainJob theirs"}},
		{ListOptions{Namespace: "ml", Everyone: true, States: []State{Succeeded, Suspended}}, []string{"AppWrapper stopped", "TrainJob theirs"}},
		{ListOptions{Namespace: "other"}, nil},
		{ListOptions{}, []string{"AppWrapper queued", "AppWrapper running", "AppWrapper stopped"}},
	} {
		list, err := client.List(context.Background(), tc.opts)
		require.NoError(t, err)
		var got []string
		for _, s := range list.Jobs {
			got = append(got, s.Kind+" "+s.Name)
		}
		require.Equal(t, tc.want, got, "%+v", tc.opts)
	}
}

// One list of each kind, of Workloads, of pods, and of the Warning events
// of each reason that may say a refusal of pods, whatever the number of
// jobs. (Workloads are asked twice, as on a Kueue older than v0.15: its
// v1beta2 first, which this cluster does not serve, then its v1beta1.)
func TestListAsksOnce(t *testing.T) {
	client := listed(t, nil)
	_, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	asked := map[string]int{}
	var events []string
	for _, a := range client.Dynamic.(*dynamicfake.FakeDynamicClient).Actions() {
		asked[a.GetVerb()+" "+a.GetResource().Resource]++
		if list, ok := a.(clienttesting.ListAction); ok && a.GetResource().Resource == "events" {
			events = append(events, list.GetListRestrictions().Fields.String())
		}
	}
	require.Equal(t, map[string]int{
		"list appwrappers": 1, "list trainjobs": 1, "list pytorchjobs": 1, "list jobsets": 1, "list pytorchtrainingjobs": 1, "list deepspeedjobs": 1,
		"list workloads": 2, "list pods": 1, "list events": 3, "get localqueues": 1,
	}, asked)
	require.ElementsMatch(t, []string{"reason=CreateFailed,type=Warning", "reason=FailedCreate,type=Warning", "reason=FailedCreatePod,type=Warning"}, events)
}

// The JSON of list -o json: the items as status -o json writes each.
func TestListJSON(t *testing.T) {
	client := listed(t, nil)
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml", States: []State{Running}, Why: true})
	require.NoError(t, err)
	data, err := json.Marshal(list)
	require.NoError(t, err)
	require.JSONEq(t, `{"items": [{"kind": "AppWrapper", "name": "running", "namespace": "ml", "state": "Running", "queue": "team-a",
  "clusterQueue": "team-a-cq", "workload": "appwrapper-running-1",
  "pods": {"expected": 2, "pending": 0, "running": 2, "ready": 2, "succeeded": 0, "failed": 0, "restarts": 3},
  "retries": 2, "gpus": 0, "created": "2026-01-01T10:00:00Z", "generator": "0.1.0"}]}`, string(data))
}

func TestListErrors(t *testing.T) {
	// A kind the user may not list is left out, as it holds no job the
	// user may see; Workloads the user may not list are one refusal.
	client := listed(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "trainjobs", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "trainjobs"}, "", errors.New("RBAC"))
		})
		dyn.PrependReactor("list", "workloads", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "workloads"}, "", errors.New("RBAC"))
		})
	})
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 3)
	require.Empty(t, list.Notes)
	require.False(t, list.NoKind)
	require.Equal(t, `why a job waits (Kueue's Workloads), as your role does not allow it (RBAC); the right that would: list workloads.kueue.x-k8s.io in namespace ml (generator access tells each command's)`,
		list.Denied.String())
	// A role that lets the user list no kind of job, as one bound in
	// another namespace does across them.
	client = listed(t, func(dyn *dynamicfake.FakeDynamicClient) {
		for _, k := range kinds {
			dyn.PrependReactor("list", k.resource.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(k.resource.GroupResource(), "", errors.New("RBAC"))
			})
		}
	})
	list, err = client.List(context.Background(), ListOptions{})
	require.NoError(t, err)
	require.True(t, list.NoKind)
	require.Empty(t, list.Jobs)
	// Pods the user may not list are not counted as none.
	client = listed(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC"))
		})
	})
	list, err = client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	for _, s := range list.Jobs {
		require.True(t, s.Pods.Unread, s.Name)
	}
	require.Contains(t, list.Table(false, false, time.Now()), " ?/")
	// Kinds the cluster does not serve are not listed.
	client = fake(t, clustertest.Fake{Objects: appWrapper("{}"), Without: []string{"batch.tensorstack.dev/v1beta1", "jobset.x-k8s.io/v1alpha2"}})
	_, err = client.List(context.Background(), ListOptions{Namespace: "ml", Everyone: true})
	require.NoError(t, err)
	// A cluster that does not answer.
	client = listed(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, &url.Error{Op: "Get", URL: "https://fake", Err: errors.New("connection refused")}
		})
	})
	_, err = client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.ErrorAs(t, err, &Unreachable{})
	require.EqualError(t, err, fmt.Sprintf(`cannot reach the cluster at https://fake: Get "https://fake": connection refused; check that it is up, and --context and --kubeconfig`))
}

// A job whose status cannot be read is a note; the others are listed.
func TestListAJobWhoseStatusCannotBeRead(t *testing.T) {
	client := cluster(t, nil, marked(appWrapper("{phase: Running}"), "fine", "f-uid"), marked(appWrapper("{conditions: not-a-list}"), "odd", "o-uid"))
	list, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 1)
	require.Equal(t, "fine", list.Jobs[0].Name)
	require.Len(t, list.Notes, 1)
	require.Contains(t, list.Notes[0], `reading the status of AppWrapper "odd"`)
}
