package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
)

// fakeLogs plays pods/log: each container's log by pod/container (and
// /previous for the run before), set as the test goes; it records what
// was asked.
type fakeLogs struct {
	mu    sync.Mutex
	logs  map[string]string
	err   error
	asked []string
}

func (f *fakeLogs) set(logs map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = logs
}

func (f *fakeLogs) Log(_ context.Context, namespace, pod string, o podwatch.LogOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := pod + "/" + o.Container
	if o.Previous {
		key += "/previous"
	}
	asked := fmt.Sprintf("%s/%s container=%s follow=%t timestamps=%t", namespace, key, o.Container, o.Follow, o.Timestamps)
	if o.TailLines != nil {
		asked += fmt.Sprintf(" tailLines=%d", *o.TailLines)
	}
	if o.SinceSeconds != nil {
		asked += fmt.Sprintf(" sinceSeconds=%d", *o.SinceSeconds)
	}
	if o.SinceTime != nil {
		asked += " sinceTime=" + o.SinceTime.Format(time.RFC3339)
	}
	f.asked = append(f.asked, asked)
	if f.err != nil {
		return nil, f.err
	}
	text, ok := f.logs[key]
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start", o.Container, pod))
	}
	if o.Timestamps {
		text = stamped(text, o.SinceTime)
	}
	return io.NopCloser(strings.NewReader(text)), nil
}

// logStart is when the fake logs' lines were written, each a second after
// the one before.
var logStart = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// stamped is a log's lines with their times before them, as the kubelet
// writes them with timestamps=true, from the second of since on.
func stamped(text string, since *time.Time) string {
	var b strings.Builder
	for i, line := range strings.SplitAfter(text, "\n") {
		at := logStart.Add(time.Duration(i) * time.Second)
		if line != "" && (since == nil || !at.Before(since.Truncate(time.Second))) {
			b.WriteString(at.Format(time.RFC3339Nano) + " " + line)
		}
	}
	return b.String()
}

// ptjPod is a pod of the job demo (an AppWrapper's, or a bare
// PyTorchJob's), of a role and index, with its uid and container status.
func ptjPod(role string, index int, uid, container string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: demo-%[1]s-%[2]d
  namespace: ml
  uid: %[3]s
  labels: {workload.codeflare.dev/appwrapper: demo, training.kubeflow.org/job-name: demo, training.kubeflow.org/replica-type: %[1]s, training.kubeflow.org/replica-index: '%[2]d'}
spec: {containers: [{name: pytorch, image: busybox}], initContainers: [{name: setup, image: busybox}]}
status:
  phase: Running
  initContainerStatuses: [{name: setup, state: {terminated: {exitCode: 0}}}]
  containerStatuses: [%[4]s]`, role, index, uid, container)
}

// runningFor is the status of the container pytorch, running after that
// many restarts (with the run before it ended).
func runningFor(restarts int) string {
	last := ""
	if restarts > 0 {
		last = ", lastState: {terminated: {exitCode: 1}}"
	}
	return fmt.Sprintf("{name: pytorch, restartCount: %d, state: {running: {}}%s}", restarts, last)
}

// logs reads the logs as the command line asks, giving the lines as
// label|width|text (sorted: pods' lines interleave) and the notes, with
// the failures noticed among them, as "noticed: attempt N: ...".
func logs(t *testing.T, client *Client, req LogRequest) (lines, notes []string, last Status, err error) {
	t.Helper()
	return logsSaid(t, client, req, func(string) {})
}

// logsSaid reads logs as logs does, and hands on each line and note as
// it is said (one at a time): a test changes the cluster as the follower
// shows what it saw.
func logsSaid(t *testing.T, client *Client, req LogRequest, said func(string)) (lines, notes []string, last Status, err error) {
	t.Helper()
	if req.Ref.Kind == "" {
		req.Ref = Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}
	}
	last, err = client.Logs(context.Background(), req, func(l LogLine) {
		lines = append(lines, fmt.Sprintf("%s|%d|%s", l.Label, l.Width, l.Text))
		said(l.Text)
	}, func(n string) {
		notes = append(notes, n)
		said(n)
	}, func(n Noticed) {
		notes = append(notes, fmt.Sprintf("noticed: attempt %d: %s", n.Attempt, n.Failure))
	})
	sort.Strings(lines)
	return lines, notes, last, err
}

func TestLogsOfEveryPod(t *testing.T) {
	client := cluster(t, nil, appWrapper("{phase: Running}"),
		ptjPod("master", 0, "m", runningFor(0)), ptjPod("worker", 0, "w0", runningFor(0)), ptjPod("worker", 10, "w10", runningFor(0)))
	source := &fakeLogs{logs: map[string]string{
		"demo-master-0/pytorch":  "loading\nstep 1\n",
		"demo-worker-0/pytorch":  "step 1\n",
		"demo-worker-10/pytorch": "step 1 without its newline",
	}}
	client.LogSource = source
	lines, notes, _, err := logs(t, client, LogRequest{Timestamps: true})
	require.NoError(t, err)
	require.Empty(t, notes)
	// Aligned to the widest label, worker-10; with the kubelet's times.
	require.Equal(t, []string{"master-0|9|2026-11-27T09:00:00Z loading", "master-0|9|2026-11-27T09:00:01Z step 1",
		"worker-0|9|2026-11-27T09:00:00Z step 1", "worker-10|9|2026-11-27T09:00:00Z step 1 without its newline"}, lines)
	sort.Strings(source.asked)
	require.Equal(t, []string{
		"ml/demo-master-0/pytorch container=pytorch follow=false timestamps=true",
		"ml/demo-worker-0/pytorch container=pytorch follow=false timestamps=true",
		"ml/demo-worker-10/pytorch container=pytorch follow=false timestamps=true",
	}, source.asked)
}

// openLogs counts the logs open at once, the most of them, and the logs
// read: each is its pod's name, twice, and its reading waits a little.
type openLogs struct {
	mu             sync.Mutex
	open, most, of int
}

func (o *openLogs) Log(_ context.Context, _, pod string, _ podwatch.LogOptions) (io.ReadCloser, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open++
	o.of++
	o.most = max(o.most, o.open)
	return &closing{Reader: strings.NewReader(pod + "\n" + pod + "\n"), close: func() {
		time.Sleep(time.Millisecond)
		o.mu.Lock()
		defer o.mu.Unlock()
		o.open--
	}}, nil
}

type closing struct {
	io.Reader
	close func()
}

func (c *closing) Close() error { c.close(); return nil }

// Without -f, the logs come one pod after another, in the order of their
// ranks (worker-2 before worker-10), each whole, a few read at once ahead
// of their turn, whatever the number of pods.
func TestLogsInTurn(t *testing.T) {
	objects := []string{appWrapper("{phase: Running}"), ptjPod("master", 0, "m", runningFor(0))}
	want := []string{"master-0|9|demo-master-0", "master-0|9|demo-master-0"}
	for i := range 40 {
		objects = append(objects, ptjPod("worker", i, fmt.Sprintf("w%d", i), runningFor(0)))
		name := fmt.Sprintf("worker-%d", i)
		want = append(want, name+"|9|demo-"+name, name+"|9|demo-"+name)
	}
	client := cluster(t, nil, objects...)
	source := &openLogs{}
	client.LogSource = source
	var lines []string
	_, err := client.Logs(context.Background(), LogRequest{Ref: Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}},
		func(l LogLine) { lines = append(lines, fmt.Sprintf("%s|%d|%s", l.Label, l.Width, l.Text)) },
		func(n string) { t.Errorf("note: %s", n) }, nil)
	require.NoError(t, err)
	require.Equal(t, want, lines)
	require.Equal(t, 41, source.of)
	require.LessOrEqual(t, source.most, podwatch.LogsAtOnce)
	require.Greater(t, source.most, 1, "the next logs are read ahead")
}

func TestLogsSelected(t *testing.T) {
	two := 2
	for _, tc := range []struct {
		name  string
		req   LogRequest
		want  []string
		asked string
	}{
		{"by role", LogRequest{Role: "worker"}, []string{"worker-0|8|w0", "worker-1|8|w1"}, ""},
		{"by role and index", LogRequest{Role: "worker-1"}, []string{"worker-1|8|w1"}, ""},
		{"by node rank: worker 1 is rank 2", LogRequest{Rank: &two}, []string{"worker-1|8|w1"}, ""},
		{"the last lines of a while", LogRequest{Role: "master", Tail: ptr(int64(5)), Since: 10 * time.Minute}, []string{"master-0|8|m"},
			"ml/demo-master-0/pytorch container=pytorch follow=false timestamps=false tailLines=5 sinceSeconds=600"},
		{"an init container", LogRequest{Role: "master", Container: "setup"}, []string{"master-0|8|cloning"},
			"ml/demo-master-0/setup container=setup follow=false timestamps=false"},
		{"the run before a restart", LogRequest{Role: "worker-1", Previous: true}, []string{"worker-1|8|w1 before"},
			"ml/demo-worker-1/pytorch/previous container=pytorch follow=false timestamps=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := cluster(t, nil, strings.Replace(pyTorchJob("{}"), "labels: {", "labels: {x: y, ", 1),
				ptjPod("master", 0, "m", runningFor(0)), ptjPod("worker", 0, "w0", runningFor(0)), ptjPod("worker", 1, "w1", runningFor(1)))
			source := &fakeLogs{logs: map[string]string{
				"demo-master-0/pytorch": "m\n", "demo-master-0/setup": "cloning\n", "demo-worker-0/pytorch": "w0\n",
				"demo-worker-1/pytorch": "w1\n", "demo-worker-1/pytorch/previous": "w1 before\n",
			}}
			client.LogSource = source
			tc.req.Ref = Ref{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"}
			lines, _, _, err := logs(t, client, tc.req)
			require.NoError(t, err)
			require.Equal(t, tc.want, lines)
			if tc.asked != "" {
				require.Equal(t, []string{tc.asked}, source.asked)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// No pod has a log yet: one line says why, instead of nothing.
func TestLogsWithoutPods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects []string
		want    string
	}{{
		name:    "queued, with Kueue's reason and the position",
		objects: []string{appWrapper("{phase: Suspended}"), workloadOwnedBy("aw-uid", pendingWL)},
		want:    "no logs yet: AppWrapper demo: Queued in LocalQueue team-a (position 2): Pending: couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed",
	}, {
		name: "an image that cannot be pulled",
		objects: []string{appWrapper("{phase: Running}"), workloadOwnedBy("aw-uid", admittedWL),
			ptjPod("master", 0, "m", `{name: pytorch, state: {waiting: {reason: ImagePullBackOff, message: 'Back-off pulling image "busybox:nope"'}}}`)},
		want: `no logs yet: AppWrapper demo: Admitted, pods ready 0/2; pod demo-master-0, container pytorch: ImagePullBackOff: Back-off pulling image "busybox:nope"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := cluster(t, pendingWorkloads, tc.objects...)
			client.LogSource = &fakeLogs{}
			lines, notes, _, err := logs(t, client, LogRequest{})
			require.NoError(t, err)
			require.Empty(t, lines)
			require.Equal(t, []string{tc.want}, notes)
		})
	}
}

// Following, the logs go on across a container's restart and across the
// AppWrapper's retry, whose new pods are said, until the job has finished.
func TestLogsFollowed(t *testing.T) {
	source := &fakeLogs{}
	steps := []struct {
		job  string
		pods []string
		logs map[string]string
	}{
		{job: "{phase: Suspended}"},
		{job: "{phase: Running}", pods: []string{ptjPod("master", 0, "m1", runningFor(0)), ptjPod("worker", 0, "w1", runningFor(0))},
			logs: map[string]string{"demo-master-0/pytorch": "m1 start\nm1 step\n", "demo-worker-0/pytorch": "w1 start\n"}},
		{job: "{phase: Running}", pods: []string{ptjPod("master", 0, "m1", runningFor(0)), ptjPod("worker", 0, "w1", runningFor(1))},
			logs: map[string]string{"demo-master-0/pytorch": "m1 start\nm1 step\n", "demo-worker-0/pytorch": "w1 after its restart\n"}},
		{job: "{phase: Running, resettingCount: 1}", pods: []string{ptjPod("master", 0, "m2", runningFor(0)), ptjPod("worker", 0, "w2", runningFor(0))},
			logs: map[string]string{"demo-master-0/pytorch": "m2 start\n", "demo-worker-0/pytorch": "w2 start\n"}},
		{job: "{phase: Succeeded, resettingCount: 1}", pods: []string{
			ptjPod("master", 0, "m2", "{name: pytorch, state: {terminated: {exitCode: 0}}}"),
			ptjPod("worker", 0, "w2", "{name: pytorch, state: {terminated: {exitCode: 0}}}")}},
	}
	var dyn *dynamicfake.FakeDynamicClient
	client := cluster(t, func(d *dynamicfake.FakeDynamicClient) { dyn = d }, appWrapper(steps[0].job))
	client.LogSource = source
	client.Poll = 20 * time.Millisecond
	// Each step comes once the follower has said what the one before
	// shows: the note that it waits, the lines of the first pods, the
	// restarted container's, then those of the retry's pods.
	at, heard := 0, 0
	after := []int{1, 3, 1, 2}
	lines, notes, last, err := logsSaid(t, client, LogRequest{Follow: true}, func(said string) {
		if strings.HasPrefix(said, "noticed") || strings.Contains(said, "restarted") || strings.HasPrefix(said, "new pods") {
			return
		}
		if heard++; at < len(after) && heard == after[at] {
			at, heard = at+1, 0
			step := steps[at]
			tracker := dyn.Tracker()
			for _, name := range []string{"demo-master-0", "demo-worker-0"} {
				_ = tracker.Delete(pods, "ml", name)
			}
			if step.logs != nil {
				source.set(step.logs)
			}
			require.NoError(t, tracker.Update(appWrappers, object(t, appWrapper(step.job)), "ml"))
			for _, p := range step.pods {
				require.NoError(t, tracker.Create(pods, object(t, p), "ml"))
			}
		}
	})
	require.NoError(t, err)
	require.Equal(t, Succeeded, last.State)
	require.Equal(t, []string{
		"master-0|8|m1 start", "master-0|8|m1 step", "master-0|8|m2 start",
		"worker-0|8|w1 after its restart", "worker-0|8|w1 start", "worker-0|8|w2 start",
	}, lines)
	// The failure is noticed as the watch of the pods sees it: among the
	// notes, where it comes.
	noticed := slices.Index(notes, "noticed: attempt 1: worker-0 (container pytorch) exited 1")
	require.GreaterOrEqual(t, noticed, 0, "the restart's failure is noticed: %q", notes)
	require.Equal(t, []string{
		"waiting for logs: AppWrapper demo: Queued in LocalQueue team-a: Kueue has not made a Workload for it yet",
		"worker-0: container pytorch restarted (1 restarts); its new log follows",
		"new pods master-0, worker-0: the AppWrapper was reset after a failure (retry 1); their logs follow",
	}, slices.Delete(notes, noticed, noticed+1))
	for _, asked := range source.asked {
		if strings.Contains(asked, "tailLines") {
			// The last lines of the run that failed, for its cause.
			require.Equal(t, "ml/demo-worker-0/pytorch/previous container=pytorch follow=false timestamps=false tailLines=200", asked)
			continue
		}
		require.Contains(t, asked, "follow=true")
	}
}

func TestLogsFollowedOfAJobThatFails(t *testing.T) {
	client := cluster(t, nil, appWrapper(`{phase: Failed, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}`),
		ptjPod("master", 0, "m", "{name: pytorch, state: {terminated: {exitCode: 3, reason: Error}}}"))
	client.LogSource = &fakeLogs{logs: map[string]string{"demo-master-0/pytorch": "Traceback\n"}}
	lines, notes, last, err := logs(t, client, LogRequest{Follow: true})
	require.NoError(t, err)
	require.Equal(t, []string{"master-0|8|Traceback"}, lines)
	require.Equal(t, []string{"noticed: attempt 1: master-0 (container pytorch) exited 3"}, notes)
	require.Equal(t, "AppWrapper demo: Failed: FoundFailedPods; master-0 (container pytorch) exited 3", last.Line())
}

func TestLogsErrors(t *testing.T) {
	forbiddenPods := func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC"))
		})
	}
	for _, tc := range []struct {
		name   string
		react  func(*dynamicfake.FakeDynamicClient)
		source *fakeLogs
		req    LogRequest
		want   string
	}{{
		name:   "you may not read the logs",
		source: &fakeLogs{err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods/log"}, "demo-master-0", errors.New("RBAC"))},
		want:   `you may not get pods/log in namespace "ml" (RBAC), which it takes to read the logs of its pods; ask an administrator for the verb get on pods/log there`,
	}, {
		name:  "you may not list the pods",
		react: forbiddenPods,
		want:  `you may not list pods in namespace "ml" (RBAC), which it takes to find the job's pods; ask an administrator for the verb list on pods there`,
	}, {
		name: "no such container",
		req:  LogRequest{Container: "sidecar"},
		want: `pod demo-master-0 of the AppWrapper "demo" in namespace "ml" has no container sidecar; its containers: setup (init), pytorch`,
	}, {
		name: "no pod of that role and rank",
		req:  LogRequest{Role: "master", Rank: ptr(1)},
		want: `no pod of the AppWrapper "demo" in namespace "ml" is the one asked for (--role master --rank 1); its pods: master-0 (rank 0)`,
	}, {
		name: "no such job",
		req:  LogRequest{Ref: Ref{Kind: "AppWrapper", Namespace: "ml", Name: "other"}},
		want: `no AppWrapper "other" in namespace "ml"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := cluster(t, tc.react, appWrapper("{phase: Running}"), ptjPod("master", 0, "m", runningFor(0)))
			client.LogSource = tc.source
			if tc.source == nil {
				client.LogSource = &fakeLogs{}
			}
			_, _, _, err := logs(t, client, tc.req)
			require.EqualError(t, err, tc.want)
		})
	}
}

// runningLog is a log that says its text, then waits for more until its
// reading is stopped, as a container that keeps running does.
type runningLog string

func (l runningLog) Log(ctx context.Context, _, _ string, _ podwatch.LogOptions) (io.ReadCloser, error) {
	r, w := io.Pipe()
	go func() {
		io.WriteString(w, string(l))
		<-ctx.Done()
		w.Close()
	}()
	return r, nil
}

// A job that has finished with a container still running (its controller
// did not stop it) is not followed for ever.
func TestLogsFollowedEndWithTheJob(t *testing.T) {
	client := cluster(t, nil, appWrapper("{phase: Succeeded}"), ptjPod("master", 0, "m", runningFor(0)))
	client.LogSource = runningLog("still running\n")
	client.Poll = time.Millisecond
	lines, _, last, err := logs(t, client, LogRequest{Follow: true})
	require.NoError(t, err)
	require.Equal(t, Succeeded, last.State)
	require.Equal(t, []string{"master-0|8|still running"}, lines)
}

// A log that cannot be read yet while following (the container is not
// ready to give it) is read again once its pod has changed, not on a
// timer; without following, a line says so and the others are read.
func TestLogsNotReadableYet(t *testing.T) {
	source := &fakeLogs{logs: map[string]string{"demo-master-0/pytorch": "m\n"}}
	var dyn *dynamicfake.FakeDynamicClient
	client := cluster(t, func(d *dynamicfake.FakeDynamicClient) { dyn = d },
		appWrapper("{phase: Running}"), ptjPod("master", 0, "m", runningFor(0)), ptjPod("worker", 0, "w", runningFor(0)))
	client.LogSource = source
	client.Poll = 10 * time.Millisecond
	lines, notes, _, err := logsSaid(t, client, LogRequest{Follow: true}, func(said string) {
		switch said {
		case "m":
			// A while after, the worker's container can give its log,
			// and its pod says so (ready).
			time.Sleep(50 * time.Millisecond)
			source.set(map[string]string{"demo-master-0/pytorch": "m\n", "demo-worker-0/pytorch": "w\n"})
			require.NoError(t, dyn.Tracker().Update(pods, object(t, ptjPod("worker", 0, "w", "{name: pytorch, ready: true, state: {running: {}}}")), "ml"))
		case "w":
			require.NoError(t, dyn.Tracker().Update(appWrappers, object(t, appWrapper("{phase: Succeeded}")), "ml"))
		}
	})
	require.NoError(t, err)
	require.Equal(t, []string{"master-0|8|m", "worker-0|8|w"}, lines)
	require.Empty(t, notes)
	worker := slices.DeleteFunc(slices.Clone(source.asked), func(asked string) bool { return !strings.Contains(asked, "demo-worker-0") })
	require.Len(t, worker, 2, "the worker's log asked before its pod changed, and once after: %q", worker)
	source.set(map[string]string{"demo-master-0/pytorch": "m\n"})
	lines, notes, _, err = logs(t, client, LogRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{"master-0|8|m"}, lines)
	require.Equal(t, []string{`worker-0: its log cannot be read: container "pytorch" in pod "demo-worker-0" is waiting to start`}, notes)
}

// brokenLog is a followed log whose first read breaks off after cut
// bytes (the cluster went away, a connection died), and whose later reads
// start at the second asked for (sinceTime), as the kubelet's do; its
// lines carry their times.
type brokenLog struct {
	mu    sync.Mutex
	text  string
	cut   int
	asked []string
}

func (b *brokenLog) Log(_ context.Context, _, _ string, o podwatch.LogOptions) (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	since := ""
	if o.SinceTime != nil {
		since = o.SinceTime.Format(time.RFC3339)
	}
	b.asked = append(b.asked, since)
	if len(b.asked) == 1 {
		return io.NopCloser(io.MultiReader(strings.NewReader(b.text[:b.cut]), iotest.ErrReader(io.ErrUnexpectedEOF))), nil
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(b.text, "\n") {
		stamp, _, _ := strings.Cut(line, " ")
		if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil && (o.SinceTime == nil || !at.Before(*o.SinceTime)) {
			out.WriteString(line)
		}
	}
	return io.NopCloser(strings.NewReader(out.String())), nil
}

// A followed log that breaks off while its container runs is taken up
// again where it stopped, from the second of its last line: each line
// once, in order, a line cut short said whole, lines of one time told
// apart by how many were read.
func TestLogsFollowedTakenUpAgain(t *testing.T) {
	text := "2026-11-27T09:00:00.5Z step 1\n" +
		"2026-11-27T09:00:01.25Z step 2\n" +
		"2026-11-27T09:00:01.25Z step 2, again\n" +
		"2026-11-27T09:00:01.25Z step 2, once more\n" +
		"2026-11-27T09:00:02Z step 3\n"
	source := &brokenLog{text: text, cut: strings.Index(text, "step 2, once") + 3}
	var dyn *dynamicfake.FakeDynamicClient
	client := cluster(t, func(d *dynamicfake.FakeDynamicClient) { dyn = d }, appWrapper("{phase: Running}"), ptjPod("master", 0, "m", runningFor(0)))
	client.LogSource = source
	client.Poll = 10 * time.Millisecond
	var lines []string
	_, err := client.Logs(context.Background(), LogRequest{Ref: Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, Follow: true},
		func(l LogLine) {
			if lines = append(lines, l.Text); l.Text == "step 3" {
				tracker := dyn.Tracker()
				require.NoError(t, tracker.Update(pods, object(t, ptjPod("master", 0, "m", "{name: pytorch, state: {terminated: {exitCode: 0}}}")), "ml"))
				require.NoError(t, tracker.Update(appWrappers, object(t, appWrapper("{phase: Succeeded}")), "ml"))
			}
		}, func(string) {}, func(Noticed) {})
	require.NoError(t, err)
	require.Equal(t, []string{"step 1", "step 2", "step 2, again", "step 2, once more", "step 3"}, lines)
	require.Equal(t, []string{"", "2026-11-27T09:00:01Z"}, source.asked[:2])
}

// A followed log whose read comes to its end while its container runs (the
// kubelet or the API server ended it) is read again a while after, from
// where it stopped, though nothing the follower watches changed; not at
// once, nor over and over.
func TestLogsFollowedReadAgainAfterAWhile(t *testing.T) {
	source := &fakeLogs{logs: map[string]string{"demo-master-0/pytorch": "a\n"}}
	var dyn *dynamicfake.FakeDynamicClient
	client := cluster(t, func(d *dynamicfake.FakeDynamicClient) { dyn = d }, appWrapper("{phase: Running}"), ptjPod("master", 0, "m", runningFor(0)))
	client.LogSource = source
	client.Poll = time.Millisecond
	began := time.Now()
	var again time.Duration
	lines, _, _, err := logsSaid(t, client, LogRequest{Follow: true}, func(said string) {
		switch said {
		case "a":
			source.set(map[string]string{"demo-master-0/pytorch": "a\nb\n"})
		case "b":
			again = time.Since(began)
			require.NoError(t, dyn.Tracker().Update(appWrappers, object(t, appWrapper("{phase: Succeeded}")), "ml"))
		}
	})
	require.NoError(t, err)
	require.Equal(t, []string{"master-0|8|a", "master-0|8|b"}, lines)
	require.GreaterOrEqual(t, again, time.Second)
	require.Len(t, source.asked, 2, "%q", source.asked)
	require.Contains(t, source.asked[1], "sinceTime=")
}
