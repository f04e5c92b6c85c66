//go:build e2e && linux

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/failure"
	"github.com/torchwrap/generator/pkg/local"
	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/e2e"
)

// The scenarios on the process nodes, whose pods run for real: the script
// the chart writes, run by sh, torchrun (Debian's PyTorch, gloo on CPU) with
// the options and the environment that the controllers give the pods, the
// training program testdata/sim/allreduce.py in every process, each pod in
// network and mount namespaces of its own. Every rank's line is read from
// its pod's log, through the API server (pods/log).

// runNamespace is the namespace of the process nodes' scenarios: it has
// LocalQueue e2e.ProcessQueue, the programs' claim, and the Secret and
// ConfigMap of the environment scenario.
const runNamespace = "sim-run"

// allreduceLine is the line allreduce.py prints in each process.
var allreduceLine = regexp.MustCompile(`^allreduce: rank (\d+) of (\d+), sum (\d+) \(expected (\d+)\), cwd ([^,]+)(.*)$`)

// rankLine is what a process printed: its rank, the world's size, the sum,
// the folder it ran in, and the variables it was asked to show; and the
// whole log of its pod, for messages.
type rankLine struct {
	pod           string
	rank, world   int
	sum, expected int
	cwd           string
	shown         map[string]string
	log           string
}

// ranks reads the allreduce lines of every pod named, through the API server
// (kubectl logs: pods/log, which it passes to the process nodes' kubelet).
func (s *sim) ranks(t *testing.T, namespace, container string, pods []string) []rankLine {
	t.Helper()
	var lines []rankLine
	for _, pod := range pods {
		log := kubectl(t, s.cluster, nil, "logs", "-n", namespace, pod, "-c", container)
		found := 0
		for _, line := range strings.Split(log, "\n") {
			m := allreduceLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			found++
			lines = append(lines, readRankLine(pod, m, log))
		}
		require.NotZero(t, found, "pod %s printed no allreduce line; its log:\n%s", pod, log)
	}
	return lines
}

// readRankLine reads an allreduce line (allreduceLine's match) of a pod.
func readRankLine(pod string, m []string, log string) rankLine {
	r := rankLine{pod: pod, cwd: m[5], shown: map[string]string{}, log: log}
	r.rank, _ = strconv.Atoi(m[1])
	r.world, _ = strconv.Atoi(m[2])
	r.sum, _ = strconv.Atoi(m[3])
	r.expected, _ = strconv.Atoi(m[4])
	for _, kv := range strings.Split(strings.TrimPrefix(m[6], ", "), ", ") {
		if name, value, ok := strings.Cut(kv, "="); ok {
			r.shown[name] = value
		}
	}
	return r
}

// allRanks checks that the lines are those of a world of n processes, each
// rank once, each with the right sum, and returns them by rank.
func allRanks(t *testing.T, lines []rankLine, n int) []rankLine {
	t.Helper()
	sort.Slice(lines, func(i, j int) bool { return lines[i].rank < lines[j].rank })
	var ranks []int
	for _, l := range lines {
		ranks = append(ranks, l.rank)
		require.Equal(t, n, l.world, "the world size seen by rank %d in pod %s", l.rank, l.pod)
		require.Equal(t, n*(n-1)/2, l.sum, "the sum of the ranks seen by rank %d in pod %s", l.rank, l.pod)
		require.Equal(t, l.expected, l.sum)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(want, ranks) {
		logs := map[string]string{}
		for _, l := range lines {
			logs[l.pod] = l.log
		}
		require.Equal(t, want, ranks, "every rank prints one line; the pods' logs:\n%v", logs)
	}
	return lines
}

// podsOf lists the names of a job's pods by a label selector, waiting until
// there are n of them.
func (s *sim) podsOf(t *testing.T, namespace, selector string, n int) []string {
	t.Helper()
	var names []string
	s.waitFor(t, namespace, fmt.Sprintf("%d pods %s", n, selector), time.Minute, func() bool {
		out := kubectl(t, s.cluster, nil, "get", "pods", "-n", namespace, "-l", selector, "-o", `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`)
		names = strings.Fields(out)
		return len(names) == n
	})
	slices.Sort(names)
	return names
}

// processJob renders testdata/sim/allreduce.settings.yaml with more
// arguments, under the name given, in runNamespace, and submits it with
// generator submit --wait; it returns what the generator said. When the job
// did not succeed, the test's log has the last lines of its pods too, which
// say why (a torchrun that refuses an option, a rank that failed).
func (s *sim) processJob(t *testing.T, name string, args ...string) result {
	t.Helper()
	dir := cases.Path(t, "testdata", "sim")
	args = append([]string{"submit", "-f", "allreduce.settings.yaml", "--kubeconfig", "ADMIN", "--wait", "--timeout", "4m",
		"--set", "jobName=" + name, "--set", "namespace=" + runNamespace}, args...)
	r := s.generate(t, dir, args...)
	t.Logf("generator submit --wait %s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
	if r.code != 0 {
		logs := s.generate(t, dir, "logs", name, "-n", runNamespace, "--kubeconfig", "ADMIN", "--tail", "10")
		t.Logf("generator logs %s --tail 10: exit %d\n%s%s", name, logs.code, logs.stdout, logs.stderr)
	}
	return r
}

// processNodes runs the scenarios on the process nodes, in two sequences at
// once: most in turn (but for the two jobs that run at once), and beside
// them those whose jobs fail, which mostly wait for the AppWrapper
// controller to look at the failed pods (once a minute), and the
// workspace's; then it lists them all.
func (s *sim) processNodes(t *testing.T) {
	ensureNamespace(t, s.cluster, runNamespace)
	s.ensureQueue(t, runNamespace, e2e.ProcessQueue)
	require.NoError(t, s.cluster.ProgramsClaim(runNamespace))

	t.Run("jobs", func(t *testing.T) {
		t.Run("in-turn", inParallel(func(t *testing.T) {
			t.Run("pytorchjob", s.runPyTorchJob)
			t.Run("elastic", s.runElastic)
			t.Run("jobset", s.runJobSet)
			t.Run("trainjob", s.runTrainJob)
			t.Run("local", s.runHereAndThere)
			t.Run("setup-and-env", s.runSetupAndEnv)
			t.Run("setup-fails", s.runSetupFails)
			t.Run("setup-goes-on", s.runSetupGoesOn)
			t.Run("deleted-pod", s.runDeletedPod)
			t.Run("t9k", s.runT9k)
			t.Run("lifecycle", s.runLifecycle)
		}))
		t.Run("beside", inParallel(func(t *testing.T) {
			t.Run("failure", s.runFailure)
			t.Run("exception", s.runException)
			t.Run("workspace", s.runWorkspace)
		}))
	})
	t.Run("list", s.listRun)
}

// The MLBatch default, a PyTorchJob of 2 pods in an AppWrapper, 2 processes a
// pod, twice at once: both masters listen on the training operator's port,
// each in its own network namespace. Every rank of each job prints the right
// sum, ranks 0 and 1 in the master's pod and 2 and 3 in the worker's (the
// static rendezvous gives a pod the ranks of its RANK). Meanwhile the
// machine's network is as it was: no link, address or route of the pods'
// network is in it, so nothing outside their namespaces reaches them.
func (s *sim) runPyTorchJob(t *testing.T) {
	jobs := []string{"allreduce", "allreduce-twin"}
	var wg sync.WaitGroup
	results := make([]result, len(jobs))
	for i, name := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.processJob(t, name)
		}()
	}
	// While they run.
	s.waitFor(t, runNamespace, "the pods of both jobs running", 2*time.Minute, func() bool {
		out := kubectl(t, s.cluster, nil, "get", "pods", "-n", runNamespace, "-l", "training.kubeflow.org/job-name in (allreduce,allreduce-twin)",
			"-o", `jsonpath={range .items[*]}{.status.phase} {.status.podIP}{"\n"}{end}`)
		running := strings.Count(out, "Running")
		if running == 4 {
			require.Equal(t, s.hostNetwork, hostNetwork(t), "the machine's network while the pods run")
		}
		return running == 4 || strings.Count(out, "Succeeded") == 4
	})
	wg.Wait()
	for i, name := range jobs {
		require.Equal(t, 0, results[i].code, "generator submit --wait %s: %s", name, results[i].stderr)
		require.Equal(t, fmt.Sprintf("AppWrapper %s: Succeeded, pods succeeded 2/2\n", name), results[i].stdout)
		pods := s.podsOf(t, runNamespace, "training.kubeflow.org/job-name="+name, 2)
		lines := allRanks(t, s.ranks(t, runNamespace, "pytorch", pods), 4)
		for _, l := range lines {
			want := name + "-master-0"
			if l.rank >= 2 {
				want = name + "-worker-0"
			}
			require.Equal(t, want, l.pod, "the pod of rank %d", l.rank)
		}
	}

	// generator logs: every pod's lines, after its role and index.
	r := s.generate(t, cases.Path(t), "logs", "allreduce", "-n", runNamespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	byLabel := labelledRanks(t, r.stdout)
	require.Equal(t, map[string][]int{"master-0": {0, 1}, "worker-0": {2, 3}}, byLabel, "the ranks in each pod's lines:\n%s", r.stdout)
	// The pod of node rank 1, the worker, alone.
	r = s.generate(t, cases.Path(t), "logs", "allreduce", "-n", runNamespace, "--kubeconfig", "ADMIN", "--rank", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, map[string][]int{"worker-0": {2, 3}}, labelledRanks(t, r.stdout), "generator logs --rank 1:\n%s", r.stdout)
}

// logLine is a line of generator logs: [label], padded, then the pod's line.
var logLine = regexp.MustCompile(`^\[([^\]]+)\] +(.*)$`)

// labelledRanks reads the output of generator logs: the ranks of the
// allreduce lines of each pod, by its label; every line must have a label.
func labelledRanks(t *testing.T, out string) map[string][]int {
	t.Helper()
	ranks := map[string][]int{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		m := logLine.FindStringSubmatch(line)
		require.NotNil(t, m, "a line of generator logs without its pod's label: %q", line)
		if r := allreduceLine.FindStringSubmatch(m[2]); r != nil {
			rank, _ := strconv.Atoi(r[1])
			ranks[m[1]] = append(ranks[m[1]], rank)
		}
	}
	for _, list := range ranks {
		slices.Sort(list)
	}
	return ranks
}

// hostNetwork is what the machine's own network namespace has: its links,
// addresses and routes.
func hostNetwork(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"-o", "link", "show"}, {"-o", "addr", "show"}, {"route", "show"}, {"-6", "route", "show"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
		cancel()
		require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
		b.Write(out)
	}
	return b.String()
}

// An elastic PyTorchJob (c10d rendezvous at the master, between 1 and 2
// pods): torchrun meets on the operator's PET_NNODES and PET_RDZV_ENDPOINT,
// and the rendezvous gives the 4 processes their ranks. Once the minimum (the
// master alone) has joined, torchrun closes the round after its last call (30
// s by default): on a busy machine the master would then train alone and
// finish, and the worker, come too late, find no rendezvous and fail the job.
// The last call here waits for the worker; two pods close the round at once.
func (s *sim) runElastic(t *testing.T) {
	const name = "elastic"
	r := s.processJob(t, name, "--set", "elastic.minPods=1", "--set", "elastic.maxPods=2",
		"--set", "torchrun.extraOptions[0]=--rdzv_conf=last_call_timeout=300")
	require.Equal(t, 0, r.code, r.stderr)
	pods := s.podsOf(t, runNamespace, "training.kubeflow.org/job-name="+name, 2)
	log := kubectl(t, s.cluster, nil, "logs", "-n", runNamespace, pods[0], "-c", "pytorch")
	require.Contains(t, log, "Starting elastic torchrun on 1:2 (min:max) pods")
	allRanks(t, s.ranks(t, runNamespace, "pytorch", pods), 4)
}

// A JobSet in an AppWrapper: RANK from the completion index, MASTER_ADDR pod
// 0's name in the JobSet's headless Service, which the cluster's DNS
// answers.
func (s *sim) runJobSet(t *testing.T) {
	const name = "jobset"
	r := s.processJob(t, name, "--set", "jobKind=JobSet")
	require.Equal(t, 0, r.code, r.stderr)
	pods := s.podsOf(t, runNamespace, "jobset.sigs.k8s.io/jobset-name="+name, 2)
	for _, l := range allRanks(t, s.ranks(t, runNamespace, "pytorch", pods), 4) {
		// The Job's pods: <jobset>-node-0-<completion index>-<random>.
		require.True(t, strings.HasPrefix(l.pod, fmt.Sprintf("%s-node-0-%d-", name, l.rank/2)), "the pod of rank %d: %s", l.rank, l.pod)
	}
}

// A bare TrainJob on the runtime torch-distributed: torchrun on the PET_
// variables the Trainer sets, master at pod 0's name.
func (s *sim) runTrainJob(t *testing.T) {
	const name = "trainjob"
	r := s.processJob(t, name, "--set", "jobKind=TrainJob", "--set", "wrapper=none", "--set", "priority=null")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "TrainJob trainjob: Succeeded, pods succeeded 2/2\n", r.stdout)
	pods := s.podsOf(t, runNamespace, "jobset.sigs.k8s.io/jobset-name="+name, 2)
	allRanks(t, s.ranks(t, runNamespace, "node", pods), 4)
}

// The same job on the process nodes and with generator run --local, of
// each kind whose controller run --local stands for: every rank sees the
// same environment, but for what run --local documents as different (the
// pods' names are their addresses, 127.0.1.N for pod N-1; PATH, HOME,
// HOSTNAME, the folders and the user's own variables are this machine's),
// and both runs' all_reduce agree.
func (s *sim) runHereAndThere(t *testing.T) {
	l := newLocal(t)
	for kind, args := range map[string][]string{
		"pytorchjob": nil,
		"jobset":     {"--set", "jobKind=JobSet"},
		"trainjob":   {"--set", "jobKind=TrainJob", "--set", "wrapper=none", "--set", "priority=null"},
	} {
		t.Run(kind, func(t *testing.T) {
			name := "here-and-there-" + kind
			args := append([]string{"--set", "mainProgram=/tmp/programs/allreduce.py --env"}, args...)
			r := s.processJob(t, name, args...)
			require.Equal(t, 0, r.code, r.stderr)
			selector, container := "jobset.sigs.k8s.io/jobset-name="+name, "node"
			switch kind {
			case "pytorchjob":
				selector, container = "training.kubeflow.org/job-name="+name, "pytorch"
			case "jobset":
				container = "pytorch"
			}
			var logs strings.Builder
			for _, pod := range s.podsOf(t, runNamespace, selector, 2) {
				logs.WriteString(kubectl(t, s.cluster, nil, "logs", "-n", runNamespace, pod, "-c", container))
			}
			there := environments(t, logs.String())

			here := l.run(t, append([]string{"--set", "jobName=" + name, "--set", "namespace=" + runNamespace}, args...)...)
			require.Equal(t, 0, here.code, here.stderr)
			allRanks(t, localRanks(t, here.stdout), 4)

			// The names of the pods, as their addresses.
			manifest := s.render(t, cases.Path(t, "testdata", "sim", "allreduce.settings.yaml"),
				append([]string{"--set", "jobName=" + name, "--set", "namespace=" + runNamespace}, args...)...)
			job, err := cluster.NewJob(manifest, runNamespace)
			require.NoError(t, err)
			pods, err := local.Pods(job)
			require.NoError(t, err)
			var pairs []string
			for i, p := range pods {
				for _, n := range p.Names {
					pairs = append(pairs, n, fmt.Sprintf("127.0.1.%d", i+1))
				}
			}
			addresses := strings.NewReplacer(pairs...)

			ambient := map[string]bool{}
			for _, kv := range os.Environ() {
				key, _, _ := strings.Cut(kv, "=")
				ambient[key] = true
			}
			// What run --local documents as this machine's.
			differ := map[string]bool{"PATH": true, "HOME": true, "HOSTNAME": true, "PWD": true, "OLDPWD": true, "TMPDIR": true,
				// A file in a temporary folder of torchrun's.
				"TORCHELASTIC_ERROR_FILE": true,
				// torchrun's --tee, which run --local gives it (and
				// torchrun its processes).
				"PET_TEE": true,
				// Python sets it when the environment names no locale (PEP
				// 538), as the process nodes' does not; the user's does.
				"LC_CTYPE": true}
			hereEnv := environments(t, here.stdout)
			require.Len(t, there, 4)
			require.Len(t, hereEnv, 4)
			var diffs []string
			for rank, cluster := range there {
				mine := hereEnv[rank]
				for key, value := range cluster {
					if want := addresses.Replace(value); !differ[key] && mine[key] != want {
						diffs = append(diffs, fmt.Sprintf("rank %d's %s: %q on the process nodes (%q as run --local gives it), %q here", rank, key, value, want, mine[key]))
					}
				}
				for key := range mine {
					if _, ok := cluster[key]; !ok && !differ[key] && !ambient[key] && key != localMark {
						diffs = append(diffs, fmt.Sprintf("rank %d's %s: set here, not on the process nodes", rank, key))
					}
				}
			}
			slices.Sort(diffs)
			require.Empty(t, diffs)
		})
	}
}

// environments reads the environment of each rank, as allreduce.py --env
// prints it, from its lines.
func environments(t *testing.T, text string) map[int]map[string]string {
	t.Helper()
	envs := map[int]map[string]string{}
	for _, m := range regexp.MustCompile(`environment of rank (\d+): (\{.*\})`).FindAllStringSubmatch(text, -1) {
		rank, _ := strconv.Atoi(m[1])
		env := map[string]string{}
		require.NoError(t, json.Unmarshal([]byte(m[2]), &env), m[2])
		envs[rank] = env
	}
	return envs
}

// Setup commands that change folder and export a variable, and variables
// from a Secret and a ConfigMap: every process sees them.
func (s *sim) runSetupAndEnv(t *testing.T) {
	const name = "setup-and-env"
	kubectl(t, s.cluster, []byte(`apiVersion: v1
kind: Secret
metadata: {name: sim-secret, namespace: `+runNamespace+`}
stringData: {token: s3cret-token}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: sim-config, namespace: `+runNamespace+`}
data: {mode: from-configmap}
`), "apply", "-f", "-")
	r := s.processJob(t, name,
		"--set", "setupCommands[0]=mkdir -p /tmp/work/run", "--set", "setupCommands[1]=cd /tmp/work/run",
		"--set", "setupCommands[2]=export SIM_GREETING=set-up-in-pod-$RANK",
		"--set", "environmentVariables[0].name=SIM_TOKEN", "--set", "environmentVariables[0].secret.name=sim-secret",
		"--set", "environmentVariables[0].secret.key=token",
		"--set", "environmentVariables[1].name=SIM_MODE", "--set", "environmentVariables[1].configmap.name=sim-config",
		"--set", "environmentVariables[1].configmap.key=mode",
		"--set", "mainProgram=/tmp/programs/allreduce.py --show SIM_GREETING --show SIM_TOKEN --show SIM_MODE")
	require.Equal(t, 0, r.code, r.stderr)
	pods := s.podsOf(t, runNamespace, "training.kubeflow.org/job-name="+name, 2)
	for _, l := range allRanks(t, s.ranks(t, runNamespace, "pytorch", pods), 4) {
		require.Equal(t, "/tmp/work/run", l.cwd, "the folder of rank %d", l.rank)
		require.Equal(t, map[string]string{
			"SIM_GREETING": fmt.Sprintf("set-up-in-pod-%d", l.rank/2),
			"SIM_TOKEN":    "s3cret-token",
			"SIM_MODE":     "from-configmap",
		}, l.shown, "the variables of rank %d", l.rank)
	}
}

// One rank exits 3. torchrun restarts the workers once (torchrun.maxRestarts
// 1), then exits 1, as it does whatever its worker's exit code: the pod
// fails with exit code 1 (not 3: the program's code does not reach the
// AppWrapper). The AppWrapper retries the job once (retryLimit 1), then
// fails, and generator submit --wait exits 1, having said in each attempt
// the rank that failed and its own exit code, from torchrun's summary.
// generator logs -f, started once the job is there, follows both attempts
// (their pods have the same names), says when the new pods come, shows
// torchrun's two failures of rank 1 in each, and ends when the job does,
// with exit code 1.
func (s *sim) runFailure(t *testing.T) {
	const name = "failing"
	followed := make(chan result, 1)
	go func() {
		s.waitFor(t, runNamespace, "the AppWrapper "+name, 2*time.Minute, func() bool {
			_, err := s.cluster.Kubectl(nil, "get", "appwrapper", name, "-n", runNamespace)
			return err == nil
		})
		followed <- s.generate(t, cases.Path(t), "logs", name, "-n", runNamespace, "--kubeconfig", "ADMIN", "-f")
	}()
	r := s.processJob(t, name, "--set", "numPods=1", "--set", "torchrun.maxRestarts=1",
		"--set", "retryLimit=1", "--set", "failureGracePeriodDuration=1s", "--set", "retryPausePeriodDuration=1s",
		"--set", "mainProgram=/tmp/programs/allreduce.py --fail-rank 1")
	require.Equal(t, 1, r.code, r.stderr)
	require.Empty(t, r.stdout)
	for attempt := 1; attempt <= 2; attempt++ {
		require.Contains(t, r.stderr, fmt.Sprintf("attempt %d of 2: rank 1 (master-0, local rank 1) exited 3\n", attempt))
	}
	require.Regexp(t, `(?m)^AppWrapper failing: Failed \(1 retry\): .*; rank 1 \(master-0, local rank 1\) exited 3$`, r.stderr)
	require.Contains(t, r.stderr, `the AppWrapper "failing" in namespace "sim-run" failed`)
	aw := s.get(t, runNamespace, "appwrapper", name)
	require.Equal(t, float64(1), aw["status"].(map[string]any)["resettingCount"], "times the AppWrapper reset the job")

	logs := <-followed
	t.Logf("generator logs -f %s: exit %d\n%s%s", name, logs.code, logs.stdout, logs.stderr)
	require.Equal(t, 1, logs.code, "generator logs -f ends with the failed job")
	failures := regexp.MustCompile(`(?m)^\[master-0\] .*failed \(exitcode: 3\) local_rank: 1`).FindAllString(logs.stdout, -1)
	require.Len(t, failures, 4, "two attempts, in each rank 1 fails, torchrun restarts it once, it fails again")
	require.Contains(t, logs.stderr, "new pods master-0: the AppWrapper was reset after a failure (retry 1); their logs follow")
	require.Contains(t, logs.stderr, "AppWrapper failing: Failed (1 retry)")
	require.Contains(t, logs.stderr, "attempt 2 of 2: rank 1 (master-0, local rank 1) exited 3")
}

// In a job of 2 pods, rank 3 (worker-0's second process) raises an
// exception, in each of the job's two attempts. generator submit --wait
// says each attempt's failure as it happens: the rank, its pod's role and
// its local rank, and the exception, with the lines of its traceback. Once
// the job has failed and its pods are gone, generator status still tells
// the story, the last attempt's root cause first, and generator logs
// --attempt 1 prints the lines kept of the first attempt's failed pod.
// What the follower kept is torchrun's real output, whose parsing the
// product's tests check (pkg/failure/testdata/torchrun-1.13, which -update
// writes from here).
func (s *sim) runException(t *testing.T) {
	const name = "exception"
	r := s.processJob(t, name, "--set", "retryLimit=1", "--set", "failureGracePeriodDuration=1s", "--set", "retryPausePeriodDuration=1s",
		"--set", "mainProgram=/tmp/programs/allreduce.py --raise-rank 3")
	require.Equal(t, 1, r.code, r.stderr)
	const failed = "rank 3 (worker-0, local rank 1) exited 1: ZeroDivisionError: float division by zero"
	for attempt := 1; attempt <= 2; attempt++ {
		require.Contains(t, r.stderr, fmt.Sprintf("attempt %d of 2: %s\n  | Traceback (most recent call last):\n", attempt, failed))
	}
	require.Contains(t, r.stderr, "  | ZeroDivisionError: float division by zero\n")

	s.waitFor(t, runNamespace, "the pods of "+name+" gone", 2*time.Minute, func() bool {
		return kubectl(t, s.cluster, nil, "get", "pods", "-n", runNamespace, "-l", "workload.codeflare.dev/appwrapper="+name, "-o", "name") == ""
	})
	status := s.generate(t, cases.Path(t), "status", name, "-n", runNamespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, status.code, status.stderr)
	t.Logf("generator status %s:\n%s", name, status.stdout)
	require.Contains(t, status.stdout, "\n  cause:     attempt 2 of 2 failed: "+failed+"; no retries left\n")
	require.Contains(t, status.stdout, "\n  before:    attempt 1 of 2 failed: "+failed+"\n")
	require.Contains(t, status.stdout, "             | ZeroDivisionError: float division by zero\n")
	require.NotContains(t, status.stdout, "unseen")

	// The logs of the job, its pods gone: the attempts kept, and the last
	// one's lines.
	gone := s.generate(t, cases.Path(t), "logs", name, "-n", runNamespace, "--kubeconfig", "ADMIN")
	t.Logf("generator logs %s: exit %d\n%s%s", name, gone.code, gone.stdout, gone.stderr)
	require.Equal(t, 0, gone.code, gone.stderr)
	require.Regexp(t, `^no logs: its pods are gone: AppWrapper exception: Failed \(1 retry\): .*\n`+
		`kept on this machine: the failed pods of attempts 1 and 2; the last lines of attempt 2 follow; generator logs exception -n sim-run --attempt N prints attempt N\n`+
		`attempt 2 of 2 failed: `+regexp.QuoteMeta(failed)+`; no retries left\n$`, gone.stderr)
	require.Contains(t, gone.stdout, "[worker-0] ZeroDivisionError: float division by zero\n")

	kept := s.generate(t, cases.Path(t), "logs", name, "-n", runNamespace, "--kubeconfig", "ADMIN", "--attempt", "1")
	require.Equal(t, 0, kept.code, kept.stderr)
	require.Equal(t, "attempt 1 of 2 failed: "+failed+"\n", kept.stderr)
	require.Contains(t, kept.stdout, "[worker-0] ZeroDivisionError: float division by zero\n")
	require.Contains(t, kept.stdout, "[worker-0]   rank      : 3 (local_rank: 1)\n")
	s.capture(t, name, "exception.log", kept.stdout)
}

// A setup command that changes to a folder that does not exist: the shell
// says so, and goes on to torchrun, whose program is then not found. The
// failure says the shell's own line first. (A PyTorchJob alone, which fails
// as its pod does; an AppWrapper looks at the pods of a running job once a
// minute.)
func (s *sim) runSetupFails(t *testing.T) {
	const name = "setup-fails"
	r := s.processJob(t, name, "--set", "wrapper=none",
		"--set", "setupCommands[0]=cd /tmp/no-such-folder", "--set", "mainProgram=allreduce.py")
	require.Equal(t, 1, r.code, r.stderr)
	require.Regexp(t, `attempt 1: (master|worker)-0 \(container pytorch\): sh: 2: cd: can't cd to /tmp/no-such-folder \(a command of the launch script\); `+
		`then rank \d \((master|worker)-0, local rank \d\) exited 2: /usr/bin/python3: can't open file '/tmp/allreduce.py': \[Errno 2\] No such file or directory`, r.stderr)
	kept := s.generate(t, cases.Path(t), "logs", name, "-n", runNamespace, "--kubeconfig", "ADMIN", "--attempt", "1", "--role", "master")
	require.Equal(t, 0, kept.code, kept.stderr)
	s.capture(t, name, "setup-command.log", kept.stdout)
}

// A setup command that fails, in a job whose program does not depend on
// it: the launch goes on and the job succeeds, and submit --wait says which
// command failed, with the shell's line, as the pod of rank 0 shows it
// (every pod runs the same commands; the others' logs are not read). With
// setupErrexit the same job fails in that command, and status says so.
func (s *sim) runSetupGoesOn(t *testing.T) {
	const name = "setup-goes-on"
	r := s.processJob(t, name, "--set", "wrapper=none", "--set", "setupCommands[0]=cd /tmp/no-such-folder")
	require.Equal(t, 0, r.code, r.stderr)
	const failed = `: setup command "cd /tmp/no-such-folder" failed: sh: 2: cd: can't cd to /tmp/no-such-folder; the launch went on (setupErrexit: true stops the pod at a failed setup command)` + "\n"
	require.Contains(t, r.stderr, "master-0"+failed)
	require.NotContains(t, r.stderr, "worker-0"+failed)
	require.Contains(t, r.stdout, "Succeeded")

	const strict = "setup-errexit"
	r = s.processJob(t, strict, "--set", "wrapper=none", "--set", "setupCommands[0]=cd /tmp/no-such-folder", "--set", "setupErrexit=true")
	require.Equal(t, 1, r.code, r.stderr)
	const said = `(container pytorch): sh: 3: cd: can't cd to /tmp/no-such-folder (a command of the launch script); then the container exited 2`
	require.Regexp(t, `attempt 1: (master|worker)-0 `+regexp.QuoteMeta(said), r.stderr)
	require.Contains(t, r.stderr, `: setup command "cd /tmp/no-such-folder" failed: sh: 3: cd: can't cd to /tmp/no-such-folder; setupErrexit stops the pod there`)
	logs := s.generate(t, cases.Path(t), "logs", strict, "-n", runNamespace, "--kubeconfig", "ADMIN", "--role", "master")
	require.Contains(t, logs.stdout, "[master-0] sh: 3: cd: can't cd to /tmp/no-such-folder\n")
	require.NotContains(t, logs.stdout, "Starting torchrun", "the pod stopped at the setup command")
	status := s.generate(t, cases.Path(t), "status", strict, "-n", runNamespace, "--kubeconfig", "ADMIN")
	t.Logf("generator status %s:\n%s%s", strict, status.stdout, status.stderr)
	require.Equal(t, 0, status.code, status.stderr)
	require.Regexp(t, `\n  (cause|failed): .*`+regexp.QuoteMeta(said), status.stdout)
}

// A pod deleted while it runs (kubectl delete pod, as a person or a drain
// does): submit --wait says it was deleted, then its signal, and follows
// the job's retry to its end.
func (s *sim) runDeletedPod(t *testing.T) {
	const name = "deleted-pod"
	deleted := make(chan error, 1)
	go func() {
		s.waitFor(t, runNamespace, "the ranks of "+name+" running", 2*time.Minute, func() bool {
			out, err := s.cluster.Kubectl(nil, "logs", "-n", runNamespace, name+"-master-0")
			return err == nil && strings.Contains(string(out), "sum")
		})
		_, err := s.cluster.Kubectl(nil, "delete", "pod", "-n", runNamespace, name+"-master-0", "--wait=false")
		deleted <- err
	}()
	r := s.processJob(t, name, "--set", "retryLimit=1", "--set", "failureGracePeriodDuration=1s", "--set", "retryPausePeriodDuration=1s",
		"--set", "mainProgram=/tmp/programs/allreduce.py --hold 15")
	require.NoError(t, <-deleted)
	require.Equal(t, 0, r.code, r.stderr)
	// torchrun stops its processes at SIGTERM, and says so as it exits.
	require.Regexp(t, `(?m)^attempt 1 of 2: master-0 was deleted while it ran \(the cluster does not say by whom: a person, or a controller\); `+
		`then its container pytorch (was killed by SIGTERM \(exit code 143\)|exited 1: torchrun: torch\.distributed\.elastic\.multiprocessing\.api\.SignalException: Process \d+ got signal: 15)$`, r.stderr)
	require.Contains(t, r.stderr, "(1 retry)")
	require.Contains(t, r.stdout, "Succeeded")
}

// capture writes, under -update, the lines kept of a failed pod (generator
// logs --attempt, the first pod's, without their labels) into the
// product's test data of torchrun's output; and checks, always, that the
// product reads the same cause from the captured file as from these lines.
func (s *sim) capture(t *testing.T, job, file, kept string) {
	t.Helper()
	var lines []string
	first := ""
	for _, line := range strings.Split(strings.TrimSuffix(kept, "\n"), "\n") {
		m := logLine.FindStringSubmatch(line)
		require.NotNil(t, m, "a kept line without its pod's label: %q", line)
		if first == "" {
			first = m[1]
		}
		if m[1] == first {
			lines = append(lines, strings.TrimPrefix(line, "["+m[1]+"] "))
		}
	}
	path := cases.Path(t, "pkg", "failure", "testdata", "torchrun-1.13", file)
	if *cases.Update {
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	captured := failure.Read(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"))
	live := failure.Read(lines)
	// torchrun's time of the failure is the run's own.
	require.False(t, live.At.IsZero(), "torchrun's time of the failure")
	captured.At, live.At = time.Time{}, time.Time{}
	require.Equal(t, captured, live, "the cause read from %s (%s) and from the lines of %s kept now", file, path, job)
}

// T9k's controller is not public, so no PyTorchTrainingJob runs here. What
// can be proven is that the pods it would make train, as far as the T9k
// documents say how it makes them: the pods of the product's pkg/local
// (what generator run --local runs), named <job>-<type>-<index>, with
// MASTER_ADDR and MASTER_PORT (the master's name and a port) and, as real
// T9k scripts read them, RANK and WORLD_SIZE. The test creates those pods
// itself on the process nodes, with a headless Service of the master's
// name: the script mode's launch (sh, the setup commands, torchrun's c10d
// rendezvous at the master) runs every rank. What T9k really names
// MASTER_ADDR, its torchrun mode (the controller writes that torchrun line)
// and the DeepSpeedJob (its launcher reaches the workers over ssh) stay
// unproven.
func (s *sim) runT9k(t *testing.T) {
	const name = "t9k"
	manifest := s.render(t, cases.Path(t, "testdata", "sim", "allreduce.settings.yaml"), "--set", "jobName="+name,
		"--set", "namespace="+runNamespace, "--set", "jobKind=PyTorchTrainingJob", "--set", "wrapper=none",
		"--set", "setupCommands[0]=echo set up by the script mode of T9k")
	job, err := cluster.NewJob(manifest, runNamespace)
	require.NoError(t, err)
	require.Equal(t, "PyTorchTrainingJob", job.Inner.GetKind())
	pods, err := local.Pods(job)
	require.NoError(t, err)
	var names []string
	port := ""
	for i, p := range pods {
		pod := p.Pod
		pod.Spec.NodeName = fmt.Sprintf("process-node-%d", i%e2e.ProcessNodes)
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Labels["sim.torchwrap.dev/t9k-pod"] = pod.Name
		for _, e := range pod.Spec.Containers[0].Env {
			if e.Name == "MASTER_PORT" {
				port = e.Value
			}
		}
		kubectl(t, s.cluster, mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": pod.ObjectMeta, "spec": pod.Spec}), "create", "-f", "-")
		names = append(names, pod.Name)
	}
	require.NotEmpty(t, port, "the pods' MASTER_PORT")
	kubectl(t, s.cluster, []byte(fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  clusterIP: None
  selector: {sim.torchwrap.dev/t9k-pod: %[1]s}
  ports: [{port: %[3]s}]
`, names[0], runNamespace, port)), "create", "-f", "-")
	s.waitFor(t, runNamespace, "the T9k pods Succeeded", 2*time.Minute, func() bool {
		out := kubectl(t, s.cluster, nil, "get", "pods", "-n", runNamespace, "-l", "sim.torchwrap.dev/t9k-pod", "-o", `jsonpath={.items[*].status.phase}`)
		require.NotContains(t, out, "Failed", "a T9k pod failed:\n%s", s.podLogs(t, runNamespace, names, "pytorch"))
		return out == "Succeeded Succeeded"
	})
	allRanks(t, s.ranks(t, runNamespace, "pytorch", names), 4)
}

// podLogs are the logs of pods, for a failure's message.
func (s *sim) podLogs(t *testing.T, namespace string, pods []string, container string) string {
	var b strings.Builder
	for _, pod := range pods {
		log, err := s.cluster.Kubectl(nil, "logs", "-n", namespace, pod, "-c", container)
		fmt.Fprintf(&b, "--- %s (%v)\n%s", pod, err, log)
	}
	return b.String()
}

// listed reads generator list -o json of a namespace: the jobs by name.
func (s *sim) listed(t *testing.T, namespace string) map[string]cluster.Status {
	t.Helper()
	r := s.generate(t, cases.Path(t), "list", "-n", namespace, "--kubeconfig", "ADMIN", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var list struct {
		Items []cluster.Status
		Notes []string
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list), r.stdout)
	require.Empty(t, list.Notes)
	jobs := map[string]cluster.Status{}
	for _, item := range list.Items {
		jobs[item.Name] = item
	}
	return jobs
}

// state is generator status -o json of a job.
func (s *sim) state(t *testing.T, namespace, name string) cluster.Status {
	t.Helper()
	r := s.generate(t, cases.Path(t), "status", name, "-n", namespace, "--kubeconfig", "ADMIN", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var st cluster.Status
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	return st
}

// The life of jobs after submit, in a ClusterQueue with room for one job:
// blocker runs and waiter waits behind it (generator list, field by field,
// with waiter's place in the queue); generator stop holds blocker, its pods
// go and its quota is freed, so waiter is admitted and runs; generator
// resume queues blocker again, and it runs to Succeeded once waiter is done;
// generator logs shows its ranks; generator delete leaves no pod, Workload
// or Service of it.
func (s *sim) runLifecycle(t *testing.T) {
	const namespace, queue = "sim-life", "small-process-queue"
	ensureNamespace(t, s.cluster, namespace)
	s.ensureQueue(t, namespace, queue)
	require.NoError(t, s.cluster.ProgramsClaim(namespace))
	dir := cases.Path(t, "testdata", "sim")
	submit := func(name, hold string) {
		r := s.generate(t, dir, "submit", "-f", "allreduce.settings.yaml", "--kubeconfig", "ADMIN", "--set", "jobName="+name,
			"--set", "namespace="+namespace, "--set", "queueName="+queue, "--set", "mainProgram=/tmp/programs/allreduce.py --hold "+hold)
		require.Equal(t, 0, r.code, r.stderr)
	}
	inState := func(name string, state cluster.State) func() bool {
		return func() bool { return s.state(t, namespace, name).State == state }
	}
	submit("blocker", "20")
	s.waitFor(t, namespace, "blocker Running", 2*time.Minute, inState("blocker", cluster.Running))
	submit("waiter", "0")
	s.waitFor(t, namespace, "waiter Queued, first in its queue", time.Minute, func() bool {
		st := s.state(t, namespace, "waiter")
		return st.State == cluster.Queued && st.Position == 1
	})

	jobs := s.listed(t, namespace)
	require.Len(t, jobs, 2)
	blocker, waiter := jobs["blocker"], jobs["waiter"]
	for _, job := range []cluster.Status{blocker, waiter} {
		require.Equal(t, "AppWrapper", job.Kind)
		require.Equal(t, namespace, job.Namespace)
		require.Equal(t, queue, job.Queue)
		require.Equal(t, int64(2), job.Pods.Expected)
		require.Equal(t, int64(4), job.GPUs)
		require.Equal(t, "0.1.0", job.Generator)
		require.False(t, job.Created.IsZero())
		require.Zero(t, job.Retries)
		require.NotEmpty(t, job.Workload)
	}
	require.Equal(t, cluster.Running, blocker.State)
	require.Equal(t, e2e.SmallProcessClusterQueue, blocker.ClusterQueue)
	require.Equal(t, 2, blocker.Pods.Ready)
	require.Zero(t, blocker.Position)
	require.Equal(t, cluster.Queued, waiter.State)
	require.Equal(t, int64(1), waiter.Position)
	require.Empty(t, waiter.ClusterQueue)
	require.Zero(t, waiter.Pods.Ready+waiter.Pods.Running)
	require.Equal(t, "Pending", waiter.Reason)
	require.Contains(t, waiter.Message, "insufficient unused quota for nvidia.com/gpu")
	r := s.generate(t, dir, "list", "-n", namespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	t.Logf("generator list:\n%s", r.stdout)
	require.Regexp(t, `(?m)^NAME +KIND +STATE +QUEUE +POSITION +PODS +GPUS +RESTARTS +AGE$`, r.stdout)
	require.Regexp(t, `(?m)^blocker +AppWrapper +Running +small-process-queue +- +2/2 +4 +0 +\S+$`, r.stdout)
	require.Regexp(t, `(?m)^waiter +AppWrapper +Queued +small-process-queue +1 +0/2 +4 +0 +\S+$`, r.stdout)

	r = s.generate(t, dir, "stop", "blocker", "-n", namespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	t.Logf("generator stop blocker: %s%s", r.stdout, r.stderr)
	s.waitFor(t, namespace, "blocker Suspended, its pods gone, waiter admitted", 2*time.Minute, func() bool {
		pods := kubectl(t, s.cluster, nil, "get", "pods", "-n", namespace, "-l", "workload.codeflare.dev/appwrapper=blocker", "-o", "name")
		st := s.state(t, namespace, "waiter").State
		return pods == "" && s.state(t, namespace, "blocker").State == cluster.Suspended && (st == cluster.Running || st == cluster.Succeeded)
	})
	require.Equal(t, cluster.Suspended, s.listed(t, namespace)["blocker"].State)
	s.waitFor(t, namespace, "waiter Succeeded", 2*time.Minute, inState("waiter", cluster.Succeeded))

	r = s.generate(t, dir, "resume", "blocker", "-n", namespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	t.Logf("generator resume blocker: %s%s", r.stdout, r.stderr)
	s.waitFor(t, namespace, "blocker Succeeded", 3*time.Minute, inState("blocker", cluster.Succeeded))
	r = s.generate(t, dir, "logs", "blocker", "-n", namespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, map[string][]int{"master-0": {0, 1}, "worker-0": {2, 3}}, labelledRanks(t, r.stdout), "generator logs blocker:\n%s", r.stdout)

	r = s.generate(t, dir, "delete", "blocker", "-n", namespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	t.Logf("generator delete blocker: %s%s", r.stdout, r.stderr)
	for what, args := range map[string][]string{
		"pods":     {"pods", "-l", "training.kubeflow.org/job-name=blocker"},
		"Services": {"services", "-l", "training.kubeflow.org/job-name=blocker"},
	} {
		require.Empty(t, kubectl(t, s.cluster, nil, append([]string{"get", "-n", namespace, "-o", "name"}, args...)...), "the %s of blocker", what)
	}
	_, hasWorkload := s.workloads(t, namespace)["blocker"]
	require.False(t, hasWorkload, "the Workload of blocker")
	r = s.generate(t, dir, "delete", "blocker", "-n", namespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `no job "blocker" in namespace "sim-life"`)
	r = s.generate(t, dir, "delete", "blocker", "-n", namespace, "--kubeconfig", "ADMIN", "--ignore-not-found")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{"waiter"}, slices.Collect(maps.Keys(s.listed(t, namespace))))
}

// generator list of the process nodes' scenarios: each job, of each kind,
// in the state it ended in.
func (s *sim) listRun(t *testing.T) {
	states := map[string]cluster.State{}
	kinds := map[string]string{}
	for name, job := range s.listed(t, runNamespace) {
		states[name], kinds[name] = job.State, job.Kind
	}
	require.Equal(t, map[string]cluster.State{
		"allreduce": cluster.Succeeded, "allreduce-twin": cluster.Succeeded, "elastic": cluster.Succeeded, "jobset": cluster.Succeeded,
		"trainjob": cluster.Succeeded, "setup-and-env": cluster.Succeeded, "failing": cluster.Failed, "exception": cluster.Failed,
		"setup-fails": cluster.Failed, "here-and-there-pytorchjob": cluster.Succeeded, "here-and-there-jobset": cluster.Succeeded,
		"here-and-there-trainjob": cluster.Succeeded, "setup-goes-on": cluster.Succeeded, "setup-errexit": cluster.Failed,
		"deleted-pod": cluster.Succeeded,
	}, states)
	require.Equal(t, "TrainJob", kinds["trainjob"])
	require.Equal(t, "AppWrapper", kinds["jobset"])
}
