//go:build e2e && linux

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/e2e"
)

// outageNamespace is the namespace of the outages' jobs, on the process
// nodes.
const outageNamespace = "sim-outage"

// outages follows jobs on the process nodes with submit --wait and logs -f
// at once, through the cluster's hiccups: its API server killed and started
// again 20 s later, stopped (SIGSTOP) for 20 s, and a connection that stops
// carrying bytes for 20 s without closing (e2e.Proxy). Each follower says
// once that the cluster is lost and once that it is back, ends with the
// job's real outcome, and logs -f prints every line of each pod exactly
// once. They run alone, after the other scenarios, which would meet the
// same hiccups.
//
// A follower finds an API server that answers nothing, and a dead
// connection, by client-go's HTTP/2 health check: a ping after a while
// without a frame, which fails after a while more, 30 s and 15 s unless the
// environment says otherwise, as a user may. Here they are 5 s and 3 s, so
// that an outage of 20 s proves what one of a minute proves with the
// defaults.
func (s *sim) outages(t *testing.T) {
	ensureNamespace(t, s.cluster, outageNamespace)
	s.ensureQueue(t, outageNamespace, e2e.ProcessQueue)
	require.NoError(t, s.cluster.ProgramsClaim(outageNamespace))
	t.Setenv("HTTP2_READ_IDLE_TIMEOUT_SECONDS", "5")
	t.Setenv("HTTP2_PING_TIMEOUT_SECONDS", "3")
	t.Run("restart", func(t *testing.T) {
		s.throughOutage(t, "outage-restart", "ADMIN", func() { require.NoError(t, s.cluster.RestartAPIServer(20*time.Second)) })
	})
	t.Run("pause", func(t *testing.T) {
		s.throughOutage(t, "outage-pause", "ADMIN", func() { require.NoError(t, s.cluster.PauseAPIServer(20*time.Second)) })
	})
	t.Run("dead-connection", func(t *testing.T) {
		proxy, err := s.cluster.StartProxy()
		require.NoError(t, err)
		defer proxy.Close()
		s.throughOutage(t, "outage-dead", proxy.Kubeconfig, func() { proxy.Hold(20 * time.Second) })
	})
	t.Run("failure-while-down", s.failureWhileDown)
}

// outageTicks is how many lines each rank of an outage's job prints, one
// every half second: 50 s, of which an outage and the followers' return
// take about 30 s, 5 s after the job runs.
const outageTicks = 100

// throughOutage submits a job of 2 pods of 2 ranks, which print
// outageTicks lines each, follows it with submit --wait and logs -f
// (through kubeconfig), and once it runs has outage happen.
func (s *sim) throughOutage(t *testing.T, name, kubeconfig string, outage func()) {
	submit := s.background(t, "submit", "-f", "allreduce.settings.yaml", "--kubeconfig", kubeconfig, "--wait",
		"--set", "jobName="+name, "--set", "namespace="+outageNamespace, "--set", fmt.Sprintf("mainProgram=/tmp/programs/allreduce.py --ticks %d", outageTicks))
	// Its pods running, not only its AppWrapper: a pause of the API server
	// while the training operator creates the pods left them unmade past
	// the AppWrapper's grace, which reset the job again and again (in CI
	// and here, each time the outage came before the pods ran; never
	// after), and that is the cluster's story, not the followers'.
	s.waitFor(t, outageNamespace, name+"'s pods running", 3*time.Minute, func() bool {
		// The AppWrapper may not be there yet: submit is still creating it.
		phases, _ := s.cluster.Kubectl(nil, "get", "pods", "-n", outageNamespace, "-l", "training.kubeflow.org/job-name="+name, "-o", "jsonpath={.items[*].status.phase}")
		return phases == "Running Running"
	})
	logs := s.background(t, "logs", "-f", name, "-n", outageNamespace, "--kubeconfig", kubeconfig)
	time.Sleep(5 * time.Second)
	began := time.Now()
	outage()
	t.Logf("outage of %s", time.Since(began).Round(time.Second))
	for _, r := range []*running{submit, logs} {
		got := r.wait(t)
		require.Equal(t, 0, got.code, "generator %s:\n%s%s", r.args, got.stdout, got.stderr)
		require.Contains(t, got.stderr, "cannot be reached since", r.args)
		require.Contains(t, got.stderr, "answers again, after", r.args)
		require.Equal(t, 1, strings.Count(got.stderr, "cannot be reached since"), "said once: %s", got.stderr)
	}
	require.Contains(t, submit.result.stdout, "Succeeded")
	s.sameLines(t, name, logs.result.stdout)
}

// sameLines checks that a logs -f output has every line of each pod's own
// log (read by kubectl once the job is done) exactly once, in order.
func (s *sim) sameLines(t *testing.T, job, followed string) {
	byLabel := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSuffix(followed, "\n"), "\n") {
		label, text, ok := strings.Cut(line, "] ")
		require.True(t, ok, "a line without its pod: %q", line)
		member := strings.TrimSpace(strings.TrimPrefix(label, "["))
		byLabel[member] = append(byLabel[member], text)
	}
	for _, member := range []string{"master-0", "worker-0"} {
		own := kubectl(t, s.cluster, nil, "logs", "-n", outageNamespace, job+"-"+member, "-c", "pytorch")
		require.Equal(t, strings.Split(strings.TrimSuffix(own, "\n"), "\n"), byLabel[member], "the lines of %s, followed through the outage", member)
		require.Equal(t, 2*outageTicks, strings.Count(own, "tick "), "%s's ticks, of its two ranks", member)
	}
}

// failureWhileDown: a rank fails while the API server is down; once it is
// back, submit --wait tells the failure from the pod that still shows it,
// keeps it, and ends with the job's failure; status tells it after. The
// failing rank is the master's: a bare PyTorchJob whose master succeeded
// is Succeeded for the training operator, whatever its workers did, and it
// sees both pods ended at once when the API server comes back.
func (s *sim) failureWhileDown(t *testing.T) {
	const name = "outage-failure"
	submit := s.background(t, "submit", "-f", "allreduce.settings.yaml", "--kubeconfig", "ADMIN", "--wait",
		"--set", "jobName="+name, "--set", "namespace="+outageNamespace, "--set", "wrapper=none",
		"--set", "mainProgram=/tmp/programs/allreduce.py --ticks 20 --fail-rank 1 --exit-code 7")
	s.waitFor(t, outageNamespace, name+" running", 3*time.Minute, func() bool { return s.runningIn(t, name) == 2 })
	require.NoError(t, s.cluster.RestartAPIServer(30*time.Second))
	got := submit.wait(t)
	require.Equal(t, 1, got.code, got.stderr)
	require.Contains(t, got.stderr, "cannot be reached since")
	require.Regexp(t, `attempt 1: rank 1 \(master-0, local rank 1\) exited 7`, got.stderr)
	status := s.generate(t, cases.Path(t), "status", name, "-n", outageNamespace)
	require.Regexp(t, `cause:\s+attempt 1 failed: rank 1 \(master-0, local rank 1\) exited 7`, status.stdout)
}

// runningIn counts the running pods of a PyTorchJob of the outages.
func (s *sim) runningIn(t *testing.T, job string) int {
	out := kubectl(t, s.cluster, nil, "get", "pods", "-n", outageNamespace, "-l", "training.kubeflow.org/job-name="+job,
		"--field-selector", "status.phase=Running", "-o", "name")
	return len(strings.Fields(out))
}

// running is a run of the generator in the background, in testdata/sim.
type running struct {
	args   string
	cmd    *exec.Cmd
	done   chan struct{}
	result result
	out    bytes.Buffer
	err    bytes.Buffer
}

// background starts the generator with args as generate does, without
// waiting for it.
func (s *sim) background(t *testing.T, args ...string) *running {
	t.Helper()
	return s.backgroundWith(t, nil, args...)
}

// backgroundWith starts the generator as background does, with more
// variables in its environment.
func (s *sim) backgroundWith(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	replacer := strings.NewReplacer("ADMIN", s.cluster.Kubeconfig, "RESEARCHER", s.researcher)
	var replaced []string
	for _, arg := range args {
		replaced = append(replaced, replacer.Replace(arg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	r := &running{args: strings.Join(args, " "), done: make(chan struct{})}
	r.cmd = exec.CommandContext(ctx, s.generator, replaced...)
	r.cmd.Dir = cases.Path(t, "testdata", "sim")
	r.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+s.cluster.Kubeconfig, "KUBECACHEDIR="+t.TempDir(), "XDG_CACHE_HOME="+s.cache), env...)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.err
	require.NoError(t, r.cmd.Start())
	go func() {
		defer cancel()
		r.cmd.Wait()
		r.result = result{code: r.cmd.ProcessState.ExitCode(), stdout: r.out.String(), stderr: r.err.String()}
		close(r.done)
	}()
	return r
}

// wait waits for the run to end, and gives what it gave.
func (r *running) wait(t *testing.T) result {
	t.Helper()
	<-r.done
	t.Logf("generator %s: exit %d\n%s", r.args, r.result.code, r.result.stderr)
	require.NotEqual(t, -1, r.result.code, fmt.Sprintf("generator %s was killed", r.args))
	return r.result
}
