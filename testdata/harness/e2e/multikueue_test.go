//go:build e2e && linux

package e2e_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/e2e"
	"github.com/torchwrap/generator/testdata/harness/fidelity"
)

// multiKueue is the simulated cluster as the worker of a MultiKueue manager
// (e2e.StartManager), and the user's kubeconfig of both, whose context
// manager is the current one and worker1 the worker's.
type multiKueue struct {
	*sim
	manager    *e2e.Cluster
	kubeconfig string
}

// multiKueue submits jobs to a MultiKueue manager, from its context, with
// the same settings as to one cluster: they run on the worker's process
// nodes, and every verb follows them there.
func (s *sim) multiKueue(t *testing.T) {
	manager, err := e2e.StartManager(cases.Path(t), t.TempDir(), s.cluster, jobCRDs(t, fidelity.AppWrapperCRD, fidelity.PyTorchJobCRD), t.Logf)
	require.NoError(t, err)
	stopAtCleanup(t, manager)
	m := &multiKueue{sim: s, manager: manager, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	require.NoError(t, e2e.WriteMultiKubeconfig(m.kubeconfig, manager, s.cluster, e2e.Admin))
	t.Run("appwrapper", m.appWrapper)
	t.Run("jobset", m.jobSet)
	t.Run("failure", m.failure)
	t.Run("stop-resume-delete", m.lifecycle)
	t.Run("check", m.check)
	t.Run("refused", m.refused)
}

// on runs the generator against the manager's context.
func (m *multiKueue) on(t *testing.T, args ...string) result {
	t.Helper()
	return m.generate(t, cases.Path(t, "testdata", "sim"), append(args, "--kubeconfig", m.kubeconfig)...)
}

// submit submits the allreduce job to the manager's queue, in namespace
// default (where the worker has the LocalQueue of the same name, of the
// process nodes, and the programs' claim), with more arguments.
func (m *multiKueue) submit(t *testing.T, name string, args ...string) result {
	t.Helper()
	return m.on(t, append([]string{"submit", "-f", "allreduce.settings.yaml", "--set", "jobName=" + name,
		"--set", "namespace=default", "--set", "queueName=" + e2e.MultiKueueQueue}, args...)...)
}

// status is generator status -o json of a job in namespace default, from
// the manager's context.
func (m *multiKueue) status(t *testing.T, name string) cluster.Status {
	t.Helper()
	return m.statusIn(t, "default", name)
}

// statusIn is generator status -o json of a job in a namespace, from the
// manager's context.
func (m *multiKueue) statusIn(t *testing.T, namespace, name string) cluster.Status {
	t.Helper()
	r := m.on(t, "status", name, "-n", namespace, "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var st cluster.Status
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	return st
}

// onWorker tells whether the worker has an object of the kind and name in
// namespace default: the copy MultiKueue made.
func (m *multiKueue) onWorker(t *testing.T, kind, name string) bool {
	t.Helper()
	out, err := m.cluster.Kubectl(nil, "get", kind, name, "-n", "default", "--ignore-not-found", "-o", "name")
	require.NoError(t, err)
	return out != ""
}

// A PyTorchJob in an AppWrapper, submitted to the manager, runs on the
// worker's process nodes: status names the worker and the job's state
// there, list shows it, logs -f from the manager's context reads every
// rank's lines there and ends with the job, which Succeeds.
func (m *multiKueue) appWrapper(t *testing.T) {
	const name = "mk-allreduce"
	r := m.submit(t, name, "--set", "mainProgram=/tmp/programs/allreduce.py --hold 20")
	require.Equal(t, 0, r.code, r.stderr)
	var logs result
	var wg sync.WaitGroup
	wg.Go(func() { logs = m.on(t, "logs", "-f", name, "-n", "default") })

	m.waitFor(t, "default", name+" Running on worker1", 3*time.Minute, func() bool {
		st := m.status(t, name)
		return st.State == cluster.Running && st.Worker != nil && st.Worker.State == cluster.Running
	})
	st := m.status(t, name)
	require.Equal(t, &cluster.Worker{Name: e2e.MultiKueueWorker, Context: e2e.MultiKueueWorker, Matched: "its name", State: cluster.Running}, st.Worker)
	require.Equal(t, 2, st.Pods.Ready, "the pods on the worker")
	require.True(t, m.onWorker(t, "appwrapper", name), "the copy on the worker")
	r = m.on(t, "status", name, "-n", "default", "-v")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "\n  worker:    worker1 (context worker1, by its name): Running\n")
	require.Contains(t, r.stderr, "worker cluster worker1: context worker1 (its name), server "+m.cluster.Server()+"\n")
	r = m.on(t, "list", "-n", "default")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^NAME +KIND +STATE +WORKER +QUEUE +POSITION +PODS +GPUS +RESTARTS +AGE$`, r.stdout)
	require.Regexp(t, `(?m)^mk-allreduce +AppWrapper +Running +worker1 +multikueue-queue +- +2/2 +4 +0 +\S+$`, r.stdout)

	wg.Wait()
	require.Equal(t, 0, logs.code, "generator logs -f: %s", logs.stderr)
	require.Equal(t, map[string][]int{"master-0": {0, 1}, "worker-0": {2, 3}}, labelledRanks(t, logs.stdout), "the ranks in each pod's lines:\n%s", logs.stdout)
	m.waitFor(t, "default", name+" Succeeded, its copy gone", time.Minute, func() bool {
		return m.status(t, name).State == cluster.Succeeded && !m.onWorker(t, "appwrapper", name)
	})
}

// A JobSet alone (no AppWrapper), submitted to the manager, runs on the
// worker to Succeeded; submit --wait follows it there.
func (m *multiKueue) jobSet(t *testing.T) {
	const name = "mk-jobset"
	r := m.submit(t, name, "--set", "jobKind=JobSet", "--set", "wrapper=none", "--wait", "--timeout", "4m")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "JobSet mk-jobset: Succeeded"), r.stdout)
	st := m.status(t, name)
	require.Equal(t, cluster.Succeeded, st.State)
	require.Equal(t, e2e.MultiKueueWorker, st.Worker.Name)
}

// A rank that fails on the worker, in each of the job's two attempts:
// submit --wait from the manager's context notices each failure there as it
// happens, and once the job has failed and MultiKueue has deleted its copy
// (and the pods that said why), status on the manager still tells why.
func (m *multiKueue) failure(t *testing.T) {
	const name = "mk-failing"
	r := m.submit(t, name, "--wait", "--timeout", "4m", "--set", "numPods=1", "--set", "torchrun.maxRestarts=0",
		"--set", "retryLimit=1", "--set", "failureGracePeriodDuration=1s", "--set", "retryPausePeriodDuration=1s",
		"--set", "mainProgram=/tmp/programs/allreduce.py --fail-rank 1")
	require.Equal(t, 1, r.code, r.stderr)
	for attempt := 1; attempt <= 2; attempt++ {
		require.Contains(t, r.stderr, fmt.Sprintf("attempt %d of 2: rank 1 (master-0, local rank 1) exited 3\n", attempt))
	}
	m.waitFor(t, "default", name+"'s copy gone", time.Minute, func() bool { return !m.onWorker(t, "appwrapper", name) })
	r = m.on(t, "status", name, "-n", "default")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  cause: +attempt 2 of 2 failed: rank 1 \(master-0, local rank 1\) exited 3`, r.stdout)
	require.Regexp(t, `(?m)^  before: +attempt 1 of 2 failed: rank 1 \(master-0, local rank 1\) exited 3`, r.stdout)
}

// stop on the manager takes the job off the worker (MultiKueue deletes the
// copy), resume runs it there again, delete deletes the manager's job and
// waits until the worker's copy is gone.
func (m *multiKueue) lifecycle(t *testing.T) {
	const name = "mk-hold"
	r := m.submit(t, name, "--set", "mainProgram=/tmp/programs/allreduce.py --hold 300")
	require.Equal(t, 0, r.code, r.stderr)
	running := func() bool {
		st := m.status(t, name)
		return st.State == cluster.Running && st.Worker != nil && st.Worker.State == cluster.Running
	}
	m.waitFor(t, "default", name+" Running on worker1", 3*time.Minute, running)

	r = m.on(t, "stop", name, "-n", "default")
	require.Equal(t, 0, r.code, r.stderr)
	m.waitFor(t, "default", name+" Suspended, its copy gone", 2*time.Minute, func() bool {
		return m.status(t, name).State == cluster.Suspended && !m.onWorker(t, "appwrapper", name)
	})
	r = m.on(t, "resume", name, "-n", "default")
	require.Equal(t, 0, r.code, r.stderr)
	m.waitFor(t, "default", name+" Running on worker1 again", 3*time.Minute, running)

	r = m.on(t, "delete", name, "-n", "default")
	require.Equal(t, 0, r.code, r.stderr)
	require.False(t, m.onWorker(t, "appwrapper", name), "the copy on the worker, after delete")
	pods, err := m.cluster.Kubectl(nil, "get", "pods", "-n", "default", "-l", "workload.codeflare.dev/appwrapper="+name, "-o", "name")
	require.NoError(t, err)
	require.Empty(t, pods, "the copy's pods, after delete")
}

// check from the manager's context: the inactive worker, and, in a
// namespace where the worker has no LocalQueue of the manager's name, the
// worker that could never run the job, which is then an error (no other
// worker could).
func (m *multiKueue) check(t *testing.T) {
	r := m.on(t, "check", "-f", "allreduce.settings.yaml", "--set", "queueName="+e2e.MultiKueueQueue, "--set", "namespace=default")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^--set queueName=multikueue-queue: warning: queueName: worker cluster worker2 \(ClientConnectionFailed: .+\) of MultiKueue admission check "multikueue" is not Active: MultiKueue dispatches jobs only to worker1$`, r.stderr)

	r = m.on(t, "check", "-f", "allreduce.settings.yaml", "--set", "queueName="+e2e.MultiKueueQueue, "--set", "namespace="+e2e.MultiKueueNamespace)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, `queueName: on worker cluster worker1: no LocalQueue "multikueue-queue" in namespace "mk-team"`)
	require.Contains(t, r.stderr, `volumes[0].claimName: on worker cluster worker1: no PersistentVolumeClaim "sim-programs" in namespace "mk-team"`)
}

// A job made on the manager without generator submit (whose check stops
// it) in a namespace where the worker has no LocalQueue of the manager's
// queue's name: MultiKueue offers it to worker1, whose Kueue refuses its
// copy, and status on the manager says why it waits there.
func (m *multiKueue) refused(t *testing.T) {
	const name, namespace = "mk-refused", e2e.MultiKueueNamespace
	r := m.generate(t, cases.Path(t, "testdata", "sim"), "render", "-f", "allreduce.settings.yaml", "--set", "jobName="+name,
		"--set", "namespace="+namespace, "--set", "queueName="+e2e.MultiKueueQueue)
	require.Equal(t, 0, r.code, r.stderr)
	_, err := m.manager.Kubectl([]byte(r.stdout), "create", "-f", "-")
	require.NoError(t, err)
	var st cluster.Status
	m.waitFor(t, namespace, name+" refused on worker1", 2*time.Minute, func() bool {
		st = m.statusIn(t, namespace, name)
		return len(st.Offered) == 1 && strings.Contains(st.Offered[0].Waiting, "LocalQueue")
	})
	require.Equal(t, cluster.Queued, st.State)
	require.Nil(t, st.Worker)
	require.Equal(t, cluster.Worker{Name: e2e.MultiKueueWorker, Context: e2e.MultiKueueWorker, Matched: "its name", State: cluster.Queued,
		Waiting: "LocalQueue multikueue-queue doesn't exist"}, st.Offered[0])
	r = m.on(t, "status", name, "-n", namespace)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "\n  offered:   worker1 (context worker1, by its name): Queued: LocalQueue multikueue-queue doesn't exist\n")
	r = m.on(t, "delete", name, "-n", namespace)
	require.Equal(t, 0, r.code, r.stderr)
}
