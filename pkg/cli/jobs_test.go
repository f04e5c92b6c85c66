package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/cluster/podwatch"
	"github.com/torchwrap/generator/pkg/failure"
)

// Each line goes after its pod's label, padded to the widest label; the
// label is coloured on a terminal only, the same colour for a rank.
func TestLogWriter(t *testing.T) {
	var out strings.Builder
	plain := logWriter{w: &out}
	plain.line(cluster.LogLine{Label: "master-0", Member: cluster.Member{Role: "master", Rank: 0}, Text: "loading", Width: 9})
	plain.line(cluster.LogLine{Label: "worker-10", Member: cluster.Member{Role: "worker", Index: 10, Rank: 11}, Text: "step 1", Width: 9})
	require.Equal(t, "[master-0]  loading\n[worker-10] step 1\n", out.String())
	out.Reset()
	coloured := logWriter{w: &out, color: true}
	coloured.line(cluster.LogLine{Label: "worker-1", Member: cluster.Member{Role: "worker", Index: 1, Rank: 2}, Text: "step 1", Width: 9})
	coloured.line(cluster.LogLine{Label: "worker-1", Member: cluster.Member{Role: "worker", Index: 1, Rank: 2}, Text: "step 2", Width: 9})
	require.Equal(t, "\x1b[33m[worker-1]\x1b[0m  step 1\n\x1b[33m[worker-1]\x1b[0m  step 2\n", out.String())
}

// logSource is a pods/log of one log for every container.
type logSource string

func (l logSource) Log(context.Context, string, string, podwatch.LogOptions) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(string(l))), nil
}

// Following the logs of a job that fails ends with its status, and fails
// as submit --wait does.
func TestLogsFollowedUntilTheJobFails(t *testing.T) {
	client := fakeCluster(t, "{phase: Failed, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}")
	client.LogSource = logSource("Traceback\n")
	var out, errOut strings.Builder
	err := showLogs(context.Background(), Streams{Out: &out, Err: &errOut}, client, cluster.LogRequest{Ref: demo, Follow: true}, false)
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" failed; see it with generator status demo -n ml`)
	require.Empty(t, out.String(), "the job has no pods")
	require.Equal(t, "AppWrapper demo: Failed: FoundFailedPods\n", errOut.String())
}

// The logs of a finished job whose pods are gone: the attempts kept on
// this machine, and the last one's lines; or that none was kept.
func TestLogsOfAJobWhosePodsAreGone(t *testing.T) {
	client := fakeCluster(t, "{phase: Failed, resettingCount: 1, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}")
	client.Keeper = &failure.Keeper{Dir: t.TempDir()}
	var out, errOut strings.Builder
	require.NoError(t, showLogs(context.Background(), Streams{Out: &out, Err: &errOut}, client, cluster.LogRequest{Ref: demo}, false))
	require.Empty(t, out.String())
	require.Equal(t, "no logs: its pods are gone: AppWrapper demo: Failed (1 retry): FoundFailedPods\n"+
		"nothing of its pods was kept on this machine (only what generator submit --wait, logs -f and status saw while its pods were there is kept); generator status demo -n ml says what the cluster still tells\n", errOut.String())

	job := failure.Job{Cluster: client.Server, Namespace: "ml", Name: "demo", UID: "aw-uid"}
	for n, text := range []string{"ValueError: bad lr 3.0", "ValueError: bad lr 30.0"} {
		code := int32(1)
		f := failure.Failure{Key: fmt.Sprint(n), Pod: "demo-master-0", Member: "master-0", Container: "pytorch", Reason: "Error", ExitCode: &code}
		f.SetLines([]string{"step 1", "Traceback (most recent call last):", text})
		_, err := client.Keeper.Keep(job, n+1, 2, f)
		require.NoError(t, err)
	}
	out.Reset()
	errOut.Reset()
	require.NoError(t, showLogs(context.Background(), Streams{Out: &out, Err: &errOut}, client, cluster.LogRequest{Ref: demo}, false))
	require.Equal(t, "[master-0] step 1\n[master-0] Traceback (most recent call last):\n[master-0] ValueError: bad lr 30.0\n", out.String())
	require.Equal(t, "no logs: its pods are gone: AppWrapper demo: Failed (1 retry): FoundFailedPods\n"+
		"kept on this machine: the failed pods of attempts 1 and 2; the last lines of attempt 2 follow; generator logs demo -n ml --attempt N prints attempt N\n"+
		"attempt 2 of 2 failed: master-0 (container pytorch) exited 1: ValueError: bad lr 30.0; no retries left\n", errOut.String())
}

func TestListOutputs(t *testing.T) {
	client := fakeCluster(t, "{phase: Running}")
	for _, tc := range []struct {
		output, want string
	}{
		{"json", `{
  "items": []
}
`},
		{"yaml", "items: []\n"},
	} {
		var out, errOut strings.Builder
		listing, err := client.List(context.Background(), cluster.ListOptions{Namespace: "ml"})
		require.NoError(t, err)
		require.NoError(t, writeListing(Streams{Out: &out, Err: &errOut}, listing, cluster.ListOptions{Namespace: "ml"}, tc.output, false))
		require.Equal(t, tc.want, out.String(), "the demo job carries no marker")
	}
	var out, errOut strings.Builder
	require.NoError(t, writeListing(Streams{Out: &out, Err: &errOut}, cluster.Listing{}, cluster.ListOptions{Namespace: "ml"}, "", false))
	require.Empty(t, out.String())
	require.Equal(t, "no jobs in namespace \"ml\" that the generator made (--all-jobs lists them all)\n", errOut.String())
	listing, err := client.List(context.Background(), cluster.ListOptions{Namespace: "ml", Everyone: true})
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, writeListing(Streams{Out: &out, Err: &errOut}, listing, cluster.ListOptions{Namespace: "ml"}, "", false))
	require.Equal(t, "NAME   KIND         STATE      QUEUE    POSITION   PODS   GPUS   RESTARTS   AGE\ndemo   AppWrapper   Admitted   team-a   -          0/2    0      0          -\n", out.String())
}

func TestJobCommandsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs"}, "Error: name one job: generator logs NAME [-n NAMESPACE], or give its settings: generator logs --values settings.yaml\n"},
		{[]string{"logs", "demo", "--values", "settings.yaml"}, "Error: name the job, or give its settings with --values, not both\n"},
		{[]string{"logs", "demo", "-f", "--previous"}, "Error: --previous reads the log of a container that has ended, which cannot be followed; drop -f or --previous\n"},
		{[]string{"logs", "demo", "--rank", "-1"}, "Error: --rank -1: a node rank is 0 or more\n"},
		{[]string{"logs", "demo", "--tail", "-2"}, "Error: --tail -2: give the number of last lines to show, or -1 for all\n"},
		{[]string{"logs", "demo", "--since", "-1m"}, "Error: --since -1m0s: give how far back to start, as 10m or 2h\n"},
		{[]string{"stop"}, "Error: name one job: generator stop NAME [-n NAMESPACE], or give its settings: generator stop -f settings.yaml\n"},
		{[]string{"resume", "a", "b"}, "Error: name one job: generator resume NAME [-n NAMESPACE], or give its settings: generator resume -f settings.yaml\n"},
		{[]string{"delete", "demo", "-f", "settings.yaml"}, "Error: name the job, or give its settings with -f, not both\n"},
		{[]string{"list", "-o", "xml"}, "Error: -o xml: the formats are wide, json and yaml; leave -o out for a table\n"},
		{[]string{"list", "-A", "-n", "ml"}, "Error: -A lists every namespace, -n one; give one of them\n"},
		{[]string{"ls", "--state", "running,paused"}, "Error: --state paused: the states are Queued, Admitted, Running, Suspended, Succeeded, Failed, Deleting\n"},
	} {
		var out, errOut strings.Builder
		code := Run(tc.args, Streams{Out: &out, Err: &errOut})
		require.Equal(t, ExitUsage, code, tc.args)
		require.Empty(t, out.String())
		require.Equal(t, tc.want, errOut.String(), tc.args)
	}
}

// A job that is not there is what --ignore-not-found ignores; another
// error is not.
func TestDeleteAJobThatIsNotThere(t *testing.T) {
	client := fakeCluster(t, "{phase: Succeeded}")
	var out strings.Builder
	err := deleteJob(context.Background(), Streams{Out: &out}, client, cluster.Ref{Kind: "AppWrapper", Namespace: "ml", Name: "gone"}, false)
	require.EqualError(t, err, `no AppWrapper "gone" in namespace "ml"`)
	require.True(t, missing(err))
	_, err = client.Find(context.Background(), "ml", "gone")
	require.True(t, missing(err), "%v", err)
	require.False(t, missing(errors.New("you may not delete appwrappers")))
	require.NoError(t, deleteJob(context.Background(), Streams{Out: &out}, client, demo, false))
	require.Equal(t, `deleting AppWrapper "demo" in namespace "ml" (it was Succeeded, with no pods) in the foreground, what it made first; not waiting until it is gone (--wait=false)`+"\n", out.String())
}
