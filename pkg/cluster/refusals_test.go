package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/torchwrap/generator/pkg/failure"
)

// psaWords are the API server's words when Pod Security restricted refuses
// a pod of the job.
const psaWords = `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "pytorch" must set securityContext.allowPrivilegeEscalation=false)`

// refusedEvent is a Warning event of the training operator's: the API
// server refused to create pod of the PyTorchJob demo of uid.
func refusedEvent(name, uid, pod, words, first string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Event
metadata: {name: %s, namespace: ml}
type: Warning
involvedObject: {kind: PyTorchJob, name: demo, namespace: ml, uid: %s}
reason: FailedCreatePod
message: 'Error creating: pods "%s" is forbidden: %s'
count: 12
firstTimestamp: '%s'
lastTimestamp: '%s'`, name, uid, pod, words, first, first)
}

// A job whose pods the API server refuses: status says so as its cause,
// first and whole, once for all its pods, with the guard and the fix; the
// events it came from are not said again; and the attempt that failed so
// is kept, across the AppWrapper's reset, never told as unseen.
func TestStatusOfAJobWhosePodsAreRefused(t *testing.T) {
	resetting := "{phase: Resetting, resettingCount: 1, conditions: [{type: Unhealthy, status: 'True', reason: InsufficientPodsReady, message: '0 pods pending; 0 pods running'}]}"
	client := cluster(t, nil, appWrapper(resetting), workloadOwnedBy("aw-uid", admittedWL),
		refusedEvent("e1", "pj-1", "demo-master-0", psaWords, "2026-11-26T10:00:00Z"),
		// The worker's words name its init container too.
		refusedEvent("e2", "pj-1", "demo-worker-0", strings.Replace(psaWords, `container "pytorch"`, `containers "init-pytorch", "pytorch"`, 1), "2026-11-26T10:00:01Z"))
	client.Keeper = &failure.Keeper{Dir: t.TempDir()}
	ref := Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}
	s, err := client.Status(context.Background(), ref)
	require.NoError(t, err)
	cause := `the API server refuses to create the job's pods (Pod Security restricted (latest), as PyTorchJob demo says): ` + psaWords +
		`; set podSecurity: restricted in the settings (generator explain podSecurity), and see what else the namespace refuses with generator check; every retry will be refused the same way`
	require.Equal(t, `AppWrapper "demo" in namespace "ml": Admitted (Resetting, 1 retry)
  cause:     attempt 1: `+cause+`
  why:       InsufficientPodsReady: 0 pods pending; 0 pods running
  pods:      ready 0/2
  queue:     LocalQueue team-a, ClusterQueue team-a-cq
  workload:  appwrapper-demo-7d9f2
`, s.Lines())
	require.NotNil(t, s.Refusal, "Pod Security refuses the same pods every time")
	require.Equal(t, "AppWrapper demo: Admitted (Resetting, 1 retry), pods ready 0/2: "+cause+"; InsufficientPodsReady: 0 pods pending; 0 pods running", s.Line())

	// Attempt 2 runs, refused too: it is the cause, attempt 1 before it.
	client = cluster(t, nil, appWrapper("{phase: Running, resettingCount: 1}"), workloadOwnedBy("aw-uid", admittedWL),
		refusedEvent("e1", "pj-1", "demo-master-0", psaWords, "2026-11-26T10:00:00Z"),
		refusedEvent("e3", "pj-2", "demo-master-0", psaWords, "2026-11-26T10:03:00Z"))
	client.Keeper = &failure.Keeper{Dir: t.TempDir()}
	s, err = client.Status(context.Background(), ref)
	require.NoError(t, err)
	require.Empty(t, s.Unseen)
	require.Equal(t, `AppWrapper "demo" in namespace "ml": Admitted (1 retry)
  cause:     attempt 2: `+cause+`
  before:    attempt 1: `+cause+`
  pods:      ready 0/2
  queue:     LocalQueue team-a, ClusterQueue team-a-cq
  workload:  appwrapper-demo-7d9f2
`, s.Lines())
}

// A quota refusal is the cause; it will refuse the pods every time only
// when the quota allows less than the whole job asks for.
func TestAQuotaRefusalIsCertainBelowTheJob(t *testing.T) {
	quota := func(limited string) string {
		return `exceeded quota: team-gpus, requested: pods=1, used: pods=1, limited: pods=` + limited
	}
	for limited, certain := range map[string]bool{"1": true, "2": false} {
		client := cluster(t, nil, appWrapper("{phase: Running}"), refusedEvent("e1", "pj-1", "demo-worker-0", quota(limited), "2026-11-26T10:00:00Z"))
		s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
		require.NoError(t, err)
		require.NotNil(t, s.Failure)
		require.Equal(t, "ResourceQuota team-gpus", s.Failure.Guard)
		require.Equal(t, certain, s.Refusal != nil, "a quota of %s pods, for a job of 2", limited)
	}
}

// The objects whose controller creates a job's pods, of every kind: their
// events say the refusals.
func TestWhoMakesTheJobsPods(t *testing.T) {
	about := func(kind, name string) corev1.ObjectReference { return corev1.ObjectReference{Kind: kind, Name: name} }
	for _, c := range []struct {
		job   string
		about corev1.ObjectReference
		makes bool
	}{
		{appWrapper("{}"), about("PyTorchJob", "demo"), true},
		{appWrapper("{}"), about("PyTorchJob", "other"), false},
		{appWrapper("{}"), about("AppWrapper", "demo"), false},
		{appWrapperOf(wrappedJobSet, "{}"), about("Job", "demo-node-0"), true},
		{appWrapperOf(wrappedJobSet, "{}"), about("Job", "demo-prep"), false},
		{appWrapperOf(wrappedJobSet, "{}"), about("JobSet", "demo"), false},
		{trainJob(false, "{}"), about("Job", "demo-node-0"), true},
		{jobSet(false, "{}"), about("Job", "demo-node-1"), true},
		{pyTorchJob("{}"), about("PyTorchJob", "demo"), true},
	} {
		obj := object(t, c.job)
		require.Equal(t, c.makes, makesPods(obj, c.about), "%s %s: %s %s", obj.GetKind(), obj.GetName(), c.about.Kind, c.about.Name)
	}
}

// submit --wait and logs -f notice the refusal as it is said, once for all
// the pods, and a follower ends on one that will refuse them every time.
func TestFollowEndsOnARefusal(t *testing.T) {
	var watched func()
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) { watched = watching(t, dyn, "events") },
		appWrapper("{phase: Running}"), workloadOwnedBy("aw-uid", admittedWL))
	client.Poll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var noticed []string
	done := make(chan Status, 1)
	go func() {
		last, err := client.Follow(ctx, Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) {}, func(n Noticed) {
			noticed = append(noticed, failure.Tell(n.Attempt, n.Of, n.Failure))
		})
		require.NoError(t, err)
		done <- last
	}()
	watched()
	for i, pod := range []string{"demo-master-0", "demo-worker-0"} {
		_, err := client.Dynamic.Resource(events).Namespace("ml").Create(ctx, object(t, refusedEvent(fmt.Sprint("e", i), "pj-1", pod, psaWords, "2026-11-26T10:00:00Z")), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	select {
	case last := <-done:
		require.NotNil(t, last.Refusal)
		require.Equal(t, "Pod Security restricted (latest)", last.Refusal.Guard)
		require.Len(t, noticed, 1, "said once, for both pods")
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not end on the refusal")
	}
}

// The scheduler says the same of each pod that no node takes: status says
// it once, as the pods' problem.
func TestStatusSaysFailedSchedulingOnce(t *testing.T) {
	unschedulable := `{phase: Pending, conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable, message: "0/18 nodes are available: 16 node(s) didn't match Pod's node affinity/selector."}]}`
	words := "0/18 nodes are available: 16 node(s) didn't match Pod's node affinity/selector."
	client := cluster(t, nil, appWrapper("{phase: Running}"), workloadOwnedBy("aw-uid", admittedWL),
		pod("demo-master-0", awPods, unschedulable), pod("demo-worker-0", awPods, unschedulable),
		event("e1", "Warning", "Pod", "demo-master-0", "FailedScheduling", words, "2026-01-01T10:05:00Z", 3),
		event("e2", "Warning", "Pod", "demo-worker-0", "FailedScheduling", words, "2026-01-01T10:05:00Z", 3))
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Equal(t, `AppWrapper "demo" in namespace "ml": Admitted
  pods:      ready 0/2; 2 pending
  problem:   pod demo-master-0 cannot be scheduled: `+words+`
  queue:     LocalQueue team-a, ClusterQueue team-a-cq
  workload:  appwrapper-demo-7d9f2
`, s.Lines())
}

// list tells the jobs whose pods are refused, from one list of the
// namespace's events: a PyTorchJob's by its own events, a JobSet's by its
// Jobs'; their state Refused, the refusal their cause.
func TestListTellsTheRefusedJobs(t *testing.T) {
	jobEvent := strings.NewReplacer("kind: PyTorchJob, name: demo", "kind: Job, name: trainer-node-0")
	client := cluster(t, nil,
		marked(appWrapper("{phase: Running}"), "demo", "aw-uid"), workloadOwnedBy("aw-uid", admittedWL),
		marked(appWrapper("{phase: Running}"), "other", "other-uid"),
		strings.Replace(marked(jobSet(false, "{}"), "trainer", "js-uid"), "name: demo", "name: trainer", -1),
		refusedEvent("e1", "pj-1", "demo-master-0", psaWords, "2026-11-26T10:00:00Z"),
		jobEvent.Replace(refusedEvent("e2", "job-1", "trainer-node-0-0", psaWords, "2026-11-26T10:00:00Z")))
	listing, err := client.List(context.Background(), ListOptions{Namespace: "ml"})
	require.NoError(t, err)
	refused := map[string]string{}
	for _, s := range listing.Jobs {
		if s.Refused() {
			refused[s.Kind+" "+s.Name] = s.Failure.Object + ": " + s.Failure.Guard
		}
	}
	require.Equal(t, map[string]string{
		"AppWrapper demo": "PyTorchJob demo: Pod Security restricted (latest)",
		"JobSet trainer":  "Job trainer-node-0: Pod Security restricted (latest)",
	}, refused, "the other job is not refused")
	table := listing.Table(false, true, time.Date(2026, 11, 26, 10, 5, 0, 0, time.UTC))
	require.Regexp(t, `(?m)^demo +AppWrapper +Refused .*Pod Security restricted \(latest\), as PyTorchJob demo says\): violates PodSecurity`, table)
	require.Regexp(t, `(?m)^other +AppWrapper +Admitted `, table)
}

// logs of a job whose pods are refused says so where it says why there
// are no logs; logs -f ends on a refusal that every retry will meet.
func TestLogsOfAJobWhosePodsAreRefused(t *testing.T) {
	client := cluster(t, nil, appWrapper("{phase: Running}"), workloadOwnedBy("aw-uid", admittedWL),
		refusedEvent("e1", "pj-1", "demo-master-0", psaWords, "2026-11-26T10:00:00Z"))
	_, notes, last, err := logs(t, client, LogRequest{})
	require.NoError(t, err)
	require.Len(t, notes, 1)
	require.Regexp(t, `^no logs yet: AppWrapper demo: Admitted, pods ready 0/2: the API server refuses to create the job's pods \(Pod Security restricted`, notes[0])
	require.NotNil(t, last.Refusal)

	client.Poll = 20 * time.Millisecond
	done := make(chan Status, 1)
	go func() {
		_, _, last, err := logs(t, client, LogRequest{Follow: true})
		require.NoError(t, err)
		done <- last
	}()
	select {
	case last := <-done:
		require.NotNil(t, last.Refusal)
		require.Equal(t, "Pod Security restricted (latest)", last.Refusal.Guard)
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not end on the refusal")
	}
}
