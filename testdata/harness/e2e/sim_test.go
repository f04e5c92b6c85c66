//go:build e2e && linux

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
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

// TestSimulatedCluster runs rendered jobs in a simulated GPU cluster (see
// testdata/harness/e2e/sim.go): Kueue admits them, the AppWrapper controller,
// the training operator, the JobSet and the Trainer controllers create their
// pods, the scheduler binds the pods to fake
// GPU nodes, and kwok runs them to their end. make e2e-cluster runs it.
func TestSimulatedCluster(t *testing.T) {
	// The process nodes leave the machine's own network as it was, while
	// the cluster runs and after.
	network := hostNetwork(t)
	t.Cleanup(func() {
		require.Equal(t, network, hostNetwork(t), "the machine's network after the simulated cluster stopped")
	})
	// StartSim installs JobSet's and the Trainer's CRDs from the modules of
	// their controllers.
	cluster, err := e2e.StartSimulated(cases.Path(t), t.TempDir(), jobCRDs(t, fidelity.AppWrapperCRD, fidelity.PyTorchJobCRD), t.Logf)
	require.NoError(t, err)
	stopAtCleanup(t, cluster)
	researcher, err := cluster.KubeconfigFor(e2e.Researcher, e2e.SimRBACNamespace)
	require.NoError(t, err)
	s := &sim{cluster: cluster, generator: cases.BuildGenerator(t), researcher: researcher, hostNetwork: network, cache: t.TempDir()}

	// The scenarios run at once (make e2e-cluster gives go test -parallel
	// enough for all), but those of in-turn, which run in turn: the quota
	// and priority cases share small-cq, and the topology cases need a rack
	// free (the others' pods on the fake nodes go to e2e.SideRack).
	// MultiKueue (a manager cluster of its own, and the process nodes as its
	// worker) and GitOps (the process nodes) share nothing else.
	t.Run("scenarios", func(t *testing.T) {
		t.Run("fault-tolerance", inParallel(s.faultTolerance))
		t.Run("process-nodes", inParallel(s.processNodes))
		t.Run("roles", inParallel(s.roles))
		t.Run("cascade", inParallel(s.cascade))
		t.Run("two-pods", inParallel(s.twoPods))
		t.Run("multikueue", inParallel(s.multiKueue))
		t.Run("gitops", inParallel(s.gitops))
		t.Run("followers", inParallel(s.followers))
		t.Run("guards", inParallel(s.guards))
		t.Run("in-turn", inParallel(func(t *testing.T) {
			t.Run("webhooks", s.webhooks)
			t.Run("access", s.access)
			t.Run("examples", s.examples)
			t.Run("check", s.check)
			t.Run("submit", s.submitAndFollow)
			t.Run("quota", s.quota)
			t.Run("priority", s.priority)
			t.Run("preemption", s.preemption)
			t.Run("jobset", s.jobSet)
			t.Run("trainjob", s.trainJob)
			t.Run("topology", s.topology)
			t.Run("accelerators", s.accelerators)
			t.Run("scale", s.scale)
			t.Run("health", s.health)
		}))
	})
	// Alone, once the others are done: the cluster's profile binds every
	// namespace while it is there; the outages take the API server away.
	t.Run("profile", s.profile)
	t.Run("outages", s.outages)

	var names []string
	total := 0
	for name, kib := range cluster.Memory() {
		names = append(names, fmt.Sprintf("%s %d MiB", name, kib/1024))
		total += kib
	}
	sort.Strings(names)
	t.Logf("peak resident memory: %d MiB in all (%s)", total/1024, strings.Join(names, ", "))
}

// inParallel is a scenario that runs at once with the others of its group.
func inParallel(scenario func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		scenario(t)
	}
}

type sim struct {
	cluster   *e2e.Cluster
	generator string
	// researcher is the kubeconfig file of e2e.Researcher, whose context's
	// namespace is e2e.SimRBACNamespace.
	researcher string
	// hostNetwork is what the machine's network namespace had before the
	// cluster started (see hostNetwork).
	hostNetwork string
	// cache is the user's cache folder of every run of the generator
	// (XDG_CACHE_HOME), where it keeps why jobs failed.
	cache string
	// mlbatchRole applies MLBatch's team role once, for the scenarios that
	// bind it, which run at once (mlbatchRole).
	mlbatchRole sync.Once
}

// result is what a run of the generator gave.
type result struct {
	code           int
	stdout, stderr string
}

// generate runs the generator with args in the folder dir, where the words
// ADMIN and RESEARCHER in args stand for the kubeconfig files of the admin
// and e2e.Researcher. KUBECONFIG names the admin's, so that no run reaches
// another cluster; the discovery cache is the test's, and so is the user's
// cache folder, which every run shares. It fails the test only when the
// generator cannot run or runs for more than 5 minutes.
func (s *sim) generate(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return s.generateWith(t, nil, dir, args...)
}

// generateWith runs the generator as generate does, with more variables in
// its environment.
func (s *sim) generateWith(t *testing.T, env []string, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	replacer := strings.NewReplacer("ADMIN", s.cluster.Kubeconfig, "RESEARCHER", s.researcher)
	var replaced []string
	for _, arg := range args {
		replaced = append(replaced, replacer.Replace(arg))
	}
	cmd := exec.CommandContext(ctx, s.generator, replaced...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+s.cluster.Kubeconfig, "KUBECACHEDIR="+t.TempDir(), "XDG_CACHE_HOME="+s.cache), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	// How long a command takes, whole process, against this local cluster.
	t.Logf("generator %s: %s", args[0], time.Since(start).Round(time.Millisecond))
	require.NoError(t, ctx.Err(), "generator %s in %s", strings.Join(args, " "), dir)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err, "generator %s in %s", strings.Join(args, " "), dir)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// transcript is a result as expected files hold it: "exit N", then standard
// output, then standard error, with the kubeconfig files and the API server's
// address written ADMIN, RESEARCHER and SERVER, which do not change from run
// to run.
func (s *sim) transcript(r result) []byte {
	// The researcher's first: the admin's path is the start of it.
	replacer := strings.NewReplacer(s.researcher, "RESEARCHER", s.cluster.Kubeconfig, "ADMIN", s.cluster.Server(), "SERVER")
	return []byte(replacer.Replace(fmt.Sprintf("exit %d\n%s%s", r.code, r.stdout, r.stderr)))
}

// expect compares a transcript with an expected file, or writes it under
// -update; a missing file fails, unless -update.
func expect(t *testing.T, path string, transcript []byte) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !*cases.Update {
		t.Fatalf("%s does not exist: write it with cd testdata/harness && go test -tags e2e -count=1 -run 'TestSimulatedCluster/scenarios/in-turn/check' ./e2e/ -update, and review it; it would be:\n%s", path, transcript)
	}
	cases.Check(t, path, transcript)
}

// render renders a settings file with more generator arguments (--set ...).
func (s *sim) render(t *testing.T, file string, args ...string) []byte {
	t.Helper()
	return cases.Run(t, nil, s.generator, append([]string{"render", "-f", file}, args...)...)
}

// submit creates the object of a manifest, with the namespace and the
// LocalQueue it names (see ensureQueue). It returns the object, with numbers as
// float64.
func (s *sim) submit(t *testing.T, manifest []byte) map[string]any {
	t.Helper()
	objects := cases.Objects(t, manifest)
	require.Len(t, objects, 1)
	obj := jsonObject(t, objects[0])
	labels, _ := obj["metadata"].(map[string]any)["labels"].(map[string]any)
	queue, _ := labels["kueue.x-k8s.io/queue-name"].(string)
	s.ensureQueue(t, namespaceOf(obj), queue)
	kubectl(t, s.cluster, manifest, "create", "-f", "-")
	return obj
}

// localQueues are the ClusterQueues of the LocalQueues that ensureQueue
// makes, when not cluster-queue.
var localQueues = map[string]string{
	"small-queue":         "small-cq",
	"topology-queue":      e2e.TopologyClusterQueue,
	e2e.ProcessQueue:      e2e.ProcessClusterQueue,
	"small-process-queue": e2e.SmallProcessClusterQueue,
	"team-a":              e2e.TeamAClusterQueue,
	"team-b":              e2e.TeamBClusterQueue,
	"roles-queue":         e2e.RolesClusterQueue,
}

// ensureQueue creates the namespace and its LocalQueue (unless queue is
// empty) if they do not exist: one of the ClusterQueue that localQueues
// says, or else of cluster-queue.
func (s *sim) ensureQueue(t *testing.T, namespace, queue string) {
	t.Helper()
	ensureNamespace(t, s.cluster, namespace)
	if queue == "" {
		return
	}
	if _, err := s.cluster.Kubectl(nil, "get", "localqueue", queue, "-n", namespace); err == nil {
		return
	}
	clusterQueue, ok := localQueues[queue]
	if !ok {
		clusterQueue = "cluster-queue"
	}
	kubectl(t, s.cluster, []byte(fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: %s, namespace: %s}
spec: {clusterQueue: %s}
`, queue, namespace, clusterQueue)), "create", "-f", "-")
}

// get reads an object as JSON.
func (s *sim) get(t *testing.T, namespace string, args ...string) map[string]any {
	t.Helper()
	return jsonObject(t, []byte(kubectl(t, s.cluster, nil, append([]string{"get", "-n", namespace, "-o", "json"}, args...)...)))
}

// workload is what a test needs of a Kueue Workload.
type workload struct {
	admitted, finished bool
	podSets            map[string]int
}

// workloads are the Workloads of a namespace, by the name of their owner.
func (s *sim) workloads(t *testing.T, namespace string) map[string]workload {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				OwnerReferences []struct{ Name string }
			}
			Spec struct {
				PodSets []struct {
					Name  string
					Count int
				}
			}
			Status struct {
				Admission  any
				Conditions []struct{ Type, Status string }
			}
		}
	}
	out := kubectl(t, s.cluster, nil, "get", "workloads", "-n", namespace, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	byOwner := map[string]workload{}
	for _, item := range list.Items {
		if len(item.Metadata.OwnerReferences) == 0 {
			continue
		}
		w := workload{admitted: item.Status.Admission != nil, podSets: map[string]int{}}
		for _, c := range item.Status.Conditions {
			if c.Type == "Finished" && c.Status == "True" {
				w.finished = true
			}
		}
		for _, ps := range item.Spec.PodSets {
			w.podSets[ps.Name] = ps.Count
		}
		byOwner[item.Metadata.OwnerReferences[0].Name] = w
	}
	return byOwner
}

// waitFor polls done every 200 ms for up to timeout; on timeout it fails
// with what kubectl says about the namespace.
func (s *sim) waitFor(t *testing.T, namespace, what string, timeout time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			state, _ := s.cluster.Kubectl(nil, "get", "appwrappers,pytorchjobs,jobsets,trainjobs,workloads,pods", "-n", namespace, "-o", "wide")
			events, _ := s.cluster.Kubectl(nil, "get", "events", "-n", namespace)
			t.Fatalf("%s: not after %s\n%s\n%s", what, timeout, state, events)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// workloadFinished waits until the Workload of a job that has finished
// was admitted and is Finished: Kueue marks it a moment after the job's
// controller says the job ended.
func (s *sim) workloadFinished(t *testing.T, namespace, name string) {
	t.Helper()
	s.waitFor(t, namespace, "the Workload of "+name+" admitted and Finished", 30*time.Second, func() bool {
		w := s.workloads(t, namespace)[name]
		return w.admitted && w.finished
	})
}

// appWrapperPhase is an AppWrapper's status.phase.
func (s *sim) appWrapperPhase(t *testing.T, namespace, name string) string {
	t.Helper()
	status, _ := s.get(t, namespace, "appwrapper", name)["status"].(map[string]any)
	phase, _ := status["phase"].(string)
	return phase
}

// waitPhase waits until the AppWrapper reaches the phase; reaching another
// final phase instead fails at once.
func (s *sim) waitPhase(t *testing.T, namespace, name, want string, timeout time.Duration) map[string]any {
	t.Helper()
	var aw map[string]any
	s.waitFor(t, namespace, fmt.Sprintf("AppWrapper %s/%s %s", namespace, name, want), timeout, func() bool {
		aw = s.get(t, namespace, "appwrapper", name)
		status, _ := aw["status"].(map[string]any)
		phase, _ := status["phase"].(string)
		if phase != want && (phase == "Succeeded" || phase == "Failed") {
			t.Fatalf("AppWrapper %s/%s ended %s, not %s: %v", namespace, name, phase, want, status)
		}
		return phase == want
	})
	return aw
}

// checkPods checks that the job's pods, as many as the job has replicas, ran
// on the fake GPU nodes and ended in phase.
func (s *sim) checkPods(t *testing.T, namespace, job string, replicas int, phase string) {
	t.Helper()
	pods := s.get(t, namespace, "pods", "-l", "training.kubeflow.org/job-name="+job)["items"].([]any)
	require.Len(t, pods, replicas, "pods of %s", job)
	for _, p := range pods {
		pod := p.(map[string]any)
		node, _ := pod["spec"].(map[string]any)["nodeName"].(string)
		require.True(t, strings.HasPrefix(node, "gpu-node-"), "pod %v bound to %q", pod["metadata"].(map[string]any)["name"], node)
		require.Equal(t, phase, pod["status"].(map[string]any)["phase"])
	}
}

// replicas is the number of pods of a PyTorchJob.
func replicas(job map[string]any) int {
	n := 0
	for _, spec := range job["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any) {
		n += int(spec.(map[string]any)["replicas"].(float64))
	}
	return n
}

// Every example and starter: a PyTorchJob or a JobSet, wrapped or bare, and a
// TrainJob are admitted by Kueue and run to their end (a PyTorchJob's pods
// bound to GPU nodes); a T9k job (no T9k controller runs here) is admitted
// with the podSets its AppWrapper declares, and the AppWrapper creates it and
// goes Running. A job that asks for a topology goes to topology-queue, whose
// flavor names the cluster's Topology.
func (s *sim) examples(t *testing.T) {
	for _, file := range append(cases.Examples(t), cases.Starters(t)...) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			start := time.Now()
			manifest := s.render(t, file)
			if bytes.Contains(manifest, []byte("kueue.x-k8s.io/podset-required-topology")) {
				manifest = s.render(t, file, "--set", "queueName=topology-queue")
			}
			obj := s.submit(t, manifest)
			namespace := namespaceOf(obj)
			name := obj["metadata"].(map[string]any)["name"].(string)
			defer kubectl(t, s.cluster, manifest, "delete", "--wait=true", "-f", "-")
			ended := func(what string) {
				s.workloadFinished(t, namespace, name)
				t.Logf("%s: %s in %s", name, what, time.Since(start).Round(time.Millisecond))
			}

			switch obj["kind"] {
			case "PyTorchJob", "JobSet", "TrainJob":
				// Bare: the condition each kind ends with.
				condition := map[any]string{"PyTorchJob": "Succeeded", "JobSet": "Completed", "TrainJob": "Complete"}[obj["kind"]]
				s.waitFor(t, namespace, fmt.Sprintf("bare %s %s %s", obj["kind"], name, condition), 2*time.Minute, func() bool {
					out := kubectl(t, s.cluster, nil, "get", strings.ToLower(obj["kind"].(string)), name, "-n", namespace, "-o",
						fmt.Sprintf(`jsonpath={.status.conditions[?(@.type==%q)].status}`, condition))
					return out == "True"
				})
				if obj["kind"] == "PyTorchJob" {
					s.checkPods(t, namespace, name, replicas(obj), "Succeeded")
				}
				ended(condition)
				return
			}
			job := fidelity.Wrapped(obj)[0]
			switch job["kind"] {
			case "PyTorchJob", "JobSet":
				s.waitPhase(t, namespace, name, "Succeeded", time.Minute)
				if job["kind"] == "PyTorchJob" {
					s.checkPods(t, namespace, name, replicas(job), "Succeeded")
				}
				ended("Succeeded")
				return
			}
			s.waitPhase(t, namespace, name, "Running", time.Minute)
			kubectl(t, s.cluster, nil, "get", strings.ToLower(job["kind"].(string)), name, "-n", namespace)
			w := s.workloads(t, namespace)[name]
			require.True(t, w.admitted, "the Workload of %s is admitted", name)
			var declared []int
			for _, c := range obj["spec"].(map[string]any)["components"].([]any) {
				for _, ps := range c.(map[string]any)["podSets"].([]any) {
					declared = append(declared, int(ps.(map[string]any)["replicas"].(float64)))
				}
			}
			var counts []int
			for _, count := range w.podSets {
				counts = append(counts, count)
			}
			slices.Sort(declared)
			slices.Sort(counts)
			require.Equal(t, declared, counts, "the Workload's podSets are the declared ones")
			t.Logf("%s: admitted and Running in %s", name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// generator check, read-only, against the simulated cluster. Each folder of
// testdata/cluster holds a settings file broken for one check alone (its
// first comment says how), with extra arguments in the file args if any (one
// a line; RESEARCHER and ADMIN stand for kubeconfig files), and the
// transcript of generator check -f settings.yaml --kubeconfig ADMIN [args],
// run in that folder, in expected.txt. Every example is checked too, run in
// examples/, with its transcript in testdata/cluster/examples/<name>.txt.
// -update writes the transcripts.
func (s *sim) check(t *testing.T) {
	for _, c := range cases.Cluster(t) {
		t.Run(c.Name, func(t *testing.T) {
			args := []string{"check", "-f", "settings.yaml", "--kubeconfig", "ADMIN"}
			extra, err := os.ReadFile(filepath.Join(c.Dir, "args"))
			if err != nil {
				require.ErrorIs(t, err, fs.ErrNotExist)
			}
			for _, line := range strings.Split(string(extra), "\n") {
				if line != "" {
					args = append(args, line)
				}
			}
			expect(t, filepath.Join(c.Dir, "expected.txt"), s.transcript(s.generate(t, c.Dir, args...)))
		})
	}
	// Two validating webhooks refuse a TrainJob whose ClusterTrainingRuntime
	// does not exist, Kueue's and Trainer's; the API server asks both at
	// once and reports the refusal that comes back first. The transcript is
	// the same with each of them alone.
	for _, alone := range []string{kueueTrainJobHook, trainerTrainJobHook} {
		t.Run("missing-trainingruntime/"+alone+"-alone", func(t *testing.T) {
			dir := cases.Path(t, "testdata", "cluster", "missing-trainingruntime")
			manifest := s.render(t, filepath.Join(dir, "settings.yaml"))
			for _, other := range []string{kueueTrainJobHook, trainerTrainJobHook} {
				if other != alone {
					s.withoutWebhook(t, other)
				}
			}
			s.refusedBy(t, manifest, alone)
			expect(t, filepath.Join(dir, "expected.txt"), s.transcript(s.generate(t, dir, "check", "-f", "settings.yaml", "--kubeconfig", "ADMIN")))
		})
	}
	for _, example := range cases.Examples(t) {
		name := strings.TrimSuffix(filepath.Base(example), ".settings.yaml")
		t.Run("examples/"+name, func(t *testing.T) {
			r := s.generate(t, filepath.Dir(example), "check", "-f", filepath.Base(example), "--kubeconfig", "ADMIN")
			expect(t, cases.Path(t, "testdata", "cluster", "examples", name+".txt"), s.transcript(r))
		})
	}
}

// The validating webhooks of TrainJobs: Kueue's, of its TrainJob
// integration, and Trainer's own.
const (
	kueueTrainJobHook   = "vtrainjob.kb.io"
	trainerTrainJobHook = "validator.trainjob.trainer.kubeflow.org"
)

// withoutWebhook takes a validating webhook out of its configuration until
// the test ends, when it is put back where it was.
func (s *sim) withoutWebhook(t *testing.T, name string) {
	t.Helper()
	var configs struct {
		Items []struct {
			Metadata struct{ Name string }
			Webhooks []map[string]any
		}
	}
	require.NoError(t, json.Unmarshal([]byte(kubectl(t, s.cluster, nil, "get", "validatingwebhookconfigurations", "-o", "json")), &configs))
	for _, config := range configs.Items {
		for i, hook := range config.Webhooks {
			if hook["name"] != name {
				continue
			}
			at := fmt.Sprintf("/webhooks/%d", i)
			kubectl(t, s.cluster, nil, "patch", "validatingwebhookconfiguration", config.Metadata.Name, "--type=json", "-p",
				string(mustJSON(t, []any{map[string]any{"op": "test", "path": at + "/name", "value": name}, map[string]any{"op": "remove", "path": at}})))
			t.Cleanup(func() {
				kubectl(t, s.cluster, nil, "patch", "validatingwebhookconfiguration", config.Metadata.Name, "--type=json", "-p",
					string(mustJSON(t, []any{map[string]any{"op": "add", "path": at, "value": hook}})))
			})
			return
		}
	}
	t.Fatalf("no validating webhook %s", name)
}

// refusedBy waits until a server-side dry run of the manifest is refused by
// the webhook, five times in a row: the API server reads its webhook
// configurations from a watch, a moment after they change.
func (s *sim) refusedBy(t *testing.T, manifest []byte, webhook string) {
	t.Helper()
	want := fmt.Sprintf("admission webhook %q denied the request", webhook)
	var out string
	for inARow, tries := 0, 0; inARow < 5; tries++ {
		require.Less(t, tries, 100, "a dry run refused by %s alone; the last refusal: %s", webhook, out)
		_, err := s.cluster.Kubectl(manifest, "create", "--dry-run=server", "-f", "-")
		require.Error(t, err)
		out = err.Error()
		inARow++
		if !strings.Contains(out, want) {
			inARow = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("refused by %s alone: %s", webhook, out)
}

// generator submit --wait follows a job to its end: the final state on
// standard output and exit 0 when it succeeded; exit 1 and the failing pod's
// exit code when it failed. generator status says why a job waits (Kueue's
// pending reason) and where it is in its queue (Kueue's visibility API), and
// submit refuses to replace a job that has not finished unless --force.
func (s *sim) submitAndFollow(t *testing.T) {
	const namespace = e2e.SimCheckNamespace
	helloworld := cases.Example(t, "helloworld")
	dir := filepath.Dir(helloworld)
	job := func(command, name string, more ...string) []string {
		return append([]string{command, "-f", filepath.Base(helloworld), "--kubeconfig", "ADMIN",
			"--set", "jobName=" + name, "--set", "namespace=" + namespace}, more...)
	}
	status := func(t *testing.T, name string) cluster.Status {
		r := s.generate(t, dir, "status", name, "-n", namespace, "--kubeconfig", "ADMIN", "-o", "json")
		require.Equal(t, 0, r.code, r.stderr)
		var st cluster.Status
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
		return st
	}
	defer kubectl(t, s.cluster, nil, "delete", "appwrappers", "--all", "-n", namespace, "--wait=true")

	t.Run("succeeded", func(t *testing.T) {
		r := s.generate(t, dir, job("submit", "waited", append([]string{"--wait", "--timeout", "3m"}, runFor("3s")...)...)...)
		t.Logf("standard error:\n%s", r.stderr)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "AppWrapper waited: Succeeded, pods succeeded 4/4\n", r.stdout)
		require.Contains(t, r.stderr, "AppWrapper waited: Running, pods ready 4/4")
		st := status(t, "waited")
		require.Equal(t, cluster.Succeeded, st.State)
		require.Equal(t, "default-queue", st.Queue)
	})

	t.Run("failed", func(t *testing.T) {
		// Exit code 3 is terminal: the AppWrapper fails without a retry.
		args := append(append([]string{"--wait", "--timeout", "4m", "--set", "numPods=2", "--set", "numGpusPerPod=1",
			"--set", "failureGracePeriodDuration=1s", "--set", "terminalExitCodes={3}"}, runFor("100ms")...), exitCode(3)...)
		r := s.generate(t, dir, job("submit", "fails", args...)...)
		t.Logf("standard error:\n%s", r.stderr)
		require.Equal(t, 1, r.code, r.stderr)
		require.Empty(t, r.stdout)
		// The failure as it happened, and in the job's last line.
		require.Regexp(t, `(?m)^attempt 1: (master|worker)-0 \(container pytorch\) exited 3$`, r.stderr)
		require.Regexp(t, `(?m)^AppWrapper fails: Failed: .*; (master|worker)-0 \(container pytorch\) exited 3$`, r.stderr)
		require.Contains(t, r.stderr, `the AppWrapper "fails" in namespace "sim-check" failed; see it with generator status fails -n sim-check`)
	})

	t.Run("queued", func(t *testing.T) {
		// blocker holds all of tiny-cq's GPUs while waiter is submitted.
		tiny := []string{"--set", "queueName=tiny-queue", "--set", "numPods=1", "--set", fmt.Sprintf("numGpusPerPod=%d", e2e.TinyQueueGPUs)}
		for _, name := range []string{"blocker", "waiter"} {
			r := s.generate(t, dir, job("submit", name, append(tiny, runFor("20s")...)...)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, fmt.Sprintf("submitted AppWrapper %q in namespace %q; see how it does with: generator status %s -n %s\n", name, namespace, name, namespace), r.stdout)
			if name == "blocker" {
				s.waitFor(t, namespace, "blocker admitted", time.Minute, func() bool { return s.workloads(t, namespace)["blocker"].admitted })
			}
		}
		var st cluster.Status
		s.waitFor(t, namespace, "waiter's pending reason and position", time.Minute, func() bool {
			st = status(t, "waiter")
			return st.State == cluster.Queued && strings.Contains(st.Message, "quota for nvidia.com/gpu") && st.Position == 1
		})
		r := s.generate(t, dir, "status", "waiter", "-n", namespace, "--kubeconfig", "ADMIN")
		t.Logf("generator status waiter:\n%s", r.stdout)
		require.Contains(t, r.stdout, "insufficient unused quota for nvidia.com/gpu")
		// Kueue's visibility API gives the place in the LocalQueue.
		require.Contains(t, r.stdout, "(position 1)")

		// Not replaced while it waits, unless --force.
		r = s.generate(t, dir, job("submit", "waiter", tiny...)...)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, `AppWrapper "waiter" exists in namespace "sim-check" already, and has not finished`)
		r = s.generate(t, dir, job("submit", "waiter", append(tiny, "--force")...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "in place of the one before it")
	})
}

// The webhooks run as on a real cluster: the training operator's refuses a
// PyTorchJob without a container named pytorch, the AppWrapper controller's
// an AppWrapper whose podSet points at nothing, and Kueue's suspends an
// AppWrapper on creation (which the manifest leaves unsuspended).
func (s *sim) webhooks(t *testing.T) {
	const namespace = "sim-webhooks"
	s.ensureQueue(t, namespace, "default-queue")
	render := func(args ...string) map[string]any {
		args = append([]string{"--set", "jobName=hooked", "--set", "namespace=" + namespace}, args...)
		return jsonObject(t, cases.Objects(t, s.render(t, cases.Example(t, "helloworld"), args...))[0])
	}

	job := render("--set", "wrapper=none")
	for _, spec := range job["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any) {
		container := spec.(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0]
		container.(map[string]any)["name"] = "trainer"
	}
	_, err := s.cluster.Kubectl(mustJSON(t, job), "create", "-f", "-")
	require.ErrorContains(t, err, `admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied the request`)

	aw := render()
	component := aw["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)
	component["podSets"] = []any{map[string]any{"path": "template.spec.nothing", "replicas": 1}}
	_, err = s.cluster.Kubectl(mustJSON(t, aw), "create", "-f", "-")
	require.ErrorContains(t, err, `admission webhook "vappwrapper.kb.io" denied the request`)

	// In a queue that does not exist, so that Kueue never admits it (and
	// resumes it) before the test looks.
	manifest := s.render(t, cases.Example(t, "helloworld"), "--set", "jobName=hooked", "--set", "namespace="+namespace,
		"--set", "queueName=no-such-queue")
	kubectl(t, s.cluster, manifest, "create", "-f", "-")
	suspend, _ := s.get(t, namespace, "appwrapper", "hooked")["spec"].(map[string]any)["suspend"].(bool)
	kubectl(t, s.cluster, manifest, "delete", "--wait=true", "-f", "-")
	require.True(t, suspend, "Kueue's webhook suspends a new AppWrapper")

	// Kueue's webhook suspends a bare PyTorchJob with a queue label too,
	// except in the namespace that stands for a cluster whose Kueue does not
	// manage PyTorchJobs.
	for ns, want := range map[string]bool{namespace: true, e2e.SimUnmanagedNamespace: false} {
		job := s.render(t, cases.Example(t, "helloworld"), "--set", "jobName=hooked", "--set", "namespace="+ns, "--set", "wrapper=none")
		created := jsonObject(t, []byte(kubectl(t, s.cluster, job, "create", "--dry-run=server", "-o", "json", "-f", "-")))
		runPolicy, _ := created["spec"].(map[string]any)["runPolicy"].(map[string]any)
		suspend, _ := runPolicy["suspend"].(bool)
		require.Equal(t, want, suspend, "spec.runPolicy.suspend of a new PyTorchJob in %s", ns)
	}
}

// What e2e.Researcher may do, as RBAC says: read ordinary objects in
// e2e.SimRBACNamespace (ClusterRole view, which leaves Secrets out), and
// nothing else: not create an AppWrapper there, not read Kueue's objects,
// cluster-scoped objects, or another namespace's. The admin may do anything.
func (s *sim) access(t *testing.T) {
	ns := e2e.SimRBACNamespace
	researcher := func(stdin []byte, args ...string) error {
		_, err := s.cluster.KubectlWith(s.researcher, stdin, args...)
		return err
	}
	require.NoError(t, researcher(nil, "get", "configmaps,persistentvolumeclaims,serviceaccounts,pods", "-n", ns))
	// The kubeconfig's context names the namespace.
	require.NoError(t, researcher(nil, "get", "configmaps"))

	manifest := s.render(t, cases.Example(t, "helloworld"), "--set", "namespace="+ns)
	refused := `User "researcher" cannot`
	require.ErrorContains(t, researcher(manifest, "create", "--dry-run=server", "-f", "-"), refused)
	kubectl(t, s.cluster, manifest, "create", "--dry-run=server", "-f", "-")
	for _, args := range [][]string{
		{"get", "localqueues", "-n", ns},
		{"get", "secrets", "-n", ns},
		{"get", "network-attachment-definitions", "-n", ns},
		{"get", "priorityclasses"},
		{"get", "workloadpriorityclasses"},
		{"get", "storageclasses"},
		{"get", "configmaps", "-n", e2e.SimCheckNamespace},
	} {
		require.ErrorContains(t, researcher(nil, args...), refused, "kubectl %s", strings.Join(args, " "))
		kubectl(t, s.cluster, nil, args...)
	}
}

// runFor makes the pods of a job run for a while, and exitCode end them with
// an exit code: annotations the kwok stages read.
func runFor(d string) []string {
	return []string{"--set-string", `podAnnotations.sim\.torchwrap\.dev/run-for=` + d}
}
func exitCode(code int) []string {
	return []string{"--set-string", fmt.Sprintf(`podAnnotations.sim\.torchwrap\.dev/exit-code=%d`, code)}
}

// Two jobs that each need all of small-cq's GPUs run one after the other:
// never both admitted at once, the second waiting while the first runs.
func (s *sim) quota(t *testing.T) {
	const namespace = "sim-quota"
	names := []string{"quota-a", "quota-b"}
	for _, name := range names {
		args := append([]string{"--set", "jobName=" + name, "--set", "namespace=" + namespace,
			"--set", "queueName=small-queue", "--set", fmt.Sprintf("numPods=%d", e2e.SmallQueueGPUs/8)}, runFor("3s")...)
		s.submit(t, s.render(t, cases.Example(t, "helloworld"), args...))
	}
	waited := false
	s.waitFor(t, namespace, "both jobs Succeeded", 2*time.Minute, func() bool {
		holding := 0
		for _, w := range s.workloads(t, namespace) {
			if w.admitted && !w.finished {
				holding++
			}
		}
		require.LessOrEqual(t, holding, 1, "two jobs hold small-cq's quota at once")
		a, b := s.appWrapperPhase(t, namespace, "quota-a"), s.appWrapperPhase(t, namespace, "quota-b")
		if a == "Running" && b == "Suspended" {
			waited = true
		}
		return a == "Succeeded" && b == "Succeeded"
	})
	require.True(t, waited, "quota-b was seen Suspended while quota-a ran")
}

// Fault tolerance, as the AppWrapper annotations say: a failing pod makes the
// AppWrapper reset the job retryLimit times, then fail; an exit code in
// terminalExitCodes, or one outside retryableExitCodes, fails it at once.
func (s *sim) faultTolerance(t *testing.T) {
	const namespace = "sim-faults"
	// One GPU a pod, in e2e.SideRack, to leave the others to the jobs of the
	// other scenarios. The pods fail 100 ms after they start: the AppWrapper
	// controller looks at the pods every 5 s until they all run, then once a
	// minute.
	fast := append([]string{"--set", "namespace=" + namespace, "--set", "numPods=2", "--set", "numGpusPerPod=1",
		"--set", "nodeSelector." + strings.ReplaceAll(e2e.RackLabel, ".", `\.`) + "=" + e2e.SideRack,
		"--set", "failureGracePeriodDuration=1s", "--set", "retryPausePeriodDuration=1s"}, runFor("100ms")...)
	scenarios := []struct {
		name    string
		args    []string
		retries int
	}{
		{"retry-then-fail", append(exitCode(1), "--set", "retryLimit=1"), 1},
		{"terminal-exit-code", append(exitCode(3), "--set", "retryLimit=3", "--set", "terminalExitCodes={3,4}"), 0},
		{"not-retryable", append(exitCode(4), "--set", "retryLimit=3", "--set", "retryableExitCodes={10}"), 0},
	}
	// Before the cases run in parallel, each creating its job there.
	s.ensureQueue(t, namespace, "default-queue")
	for _, c := range scenarios {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"--set", "jobName=" + c.name}, fast...), c.args...)
			manifest := s.render(t, cases.Example(t, "helloworld"), args...)
			s.submit(t, manifest)
			aw := s.waitPhase(t, namespace, c.name, "Failed", 4*time.Minute)
			retries, _ := aw["status"].(map[string]any)["resettingCount"].(float64)
			require.Equal(t, c.retries, int(retries), "times the AppWrapper reset the job")
			kubectl(t, s.cluster, manifest, "delete", "--wait=true", "-f", "-")
		})
	}
}

// Priority orders admission: while a job holds all of small-cq's quota, a
// low-priority job and then a high-priority one wait; the high one is
// admitted first. Once with the pods' PriorityClass (priority, MLBatch's
// way), once with a Kueue WorkloadPriorityClass (workloadPriorityClass).
func (s *sim) priority(t *testing.T) {
	for _, setting := range []string{"priority", "workloadPriorityClass"} {
		t.Run(setting, func(t *testing.T) {
			namespace := "sim-" + strings.ToLower(setting)
			job := func(name, runs string, args ...string) {
				args = append([]string{"--set", "jobName=" + name, "--set", "namespace=" + namespace,
					"--set", "queueName=small-queue", "--set", fmt.Sprintf("numPods=%d", e2e.SmallQueueGPUs/8)}, args...)
				s.submit(t, s.render(t, cases.Example(t, "helloworld"), append(args, runFor(runs)...)...))
			}
			// Long enough for the other two to be queued behind it.
			job("blocker", "6s")
			s.waitFor(t, namespace, "blocker admitted", time.Minute, func() bool { return s.workloads(t, namespace)["blocker"].admitted })
			job("low", "3s", "--set", setting+"=low-priority")
			job("high", "3s", "--set", setting+"=high-priority")
			var order []string
			s.waitFor(t, namespace, "all three Succeeded", 2*time.Minute, func() bool {
				ws := s.workloads(t, namespace)
				for _, name := range []string{"low", "high"} {
					if ws[name].admitted && !slices.Contains(order, name) {
						order = append(order, name)
					}
				}
				return ws["blocker"].finished && ws["low"].finished && ws["high"].finished
			})
			require.Equal(t, []string{"high", "low"}, order, "the order of admission")
		})
	}
}

// Preemption, in ClusterQueues set up as MLBatch sets up a cluster's teams
// (e2e.TeamAClusterQueue and TeamBClusterQueue, a node's GPUs each, in one
// cohort): team B's job borrows team A's GPUs; team A's low-priority job
// takes them back (reclamation within the cohort); then team A's
// high-priority job preempts it (prioritization in the ClusterQueue, as
// team A may not borrow). generator status of a preempted job names the job
// that preempted it, its Workload and its priority, where Kueue gives only
// a uid.
func (s *sim) preemption(t *testing.T) {
	const namespace = "sim-preempt"
	dir := filepath.Dir(cases.Example(t, "helloworld"))
	submit := func(name, queue, priority string, pods int) {
		s.ensureQueue(t, namespace, queue)
		r := s.generate(t, dir, append([]string{"submit", "-f", "helloworld.settings.yaml", "--kubeconfig", "ADMIN", "--set", "jobName=" + name,
			"--set", "namespace=" + namespace, "--set", "queueName=" + queue, "--set", "priority=" + priority,
			"--set", fmt.Sprintf("numPods=%d", pods), "--set", fmt.Sprintf("numGpusPerPod=%d", e2e.SimNodeGPUs)}, runFor("10m")...)...)
		require.Equal(t, 0, r.code, r.stderr)
	}
	defer kubectl(t, s.cluster, nil, "delete", "appwrappers", "--all", "-n", namespace, "--wait=true")
	preempted := func(name, by, priority, why string) {
		want := fmt.Sprintf("preempted by AppWrapper %s/%s (Workload %s/appwrapper-%s-", namespace, by, namespace, by)
		var st cluster.Status
		s.waitFor(t, namespace, name+" preempted by "+by, 2*time.Minute, func() bool {
			r := s.generate(t, dir, "status", name, "-n", namespace, "--kubeconfig", "ADMIN", "-o", "json")
			require.Equal(t, 0, r.code, r.stderr)
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
			return st.State == cluster.Queued && st.Reason == "Preempted" && strings.Contains(st.Message, want)
		})
		t.Logf("%s: %s", name, st.Message)
		require.Contains(t, st.Message, fmt.Sprintf(", priority %s) due to %s", priority, why))
		require.NotContains(t, st.Message, "UID")
	}

	submit("b-borrower", "team-b", "default-priority", 2)
	s.waitFor(t, namespace, "b-borrower admitted", time.Minute, func() bool { return s.workloads(t, namespace)["b-borrower"].admitted })
	submit("a-low", "team-a", "low-priority", 1)
	preempted("b-borrower", "a-low", "low-priority = 10", "reclamation within the cohort")
	s.waitFor(t, namespace, "a-low admitted", time.Minute, func() bool { return s.workloads(t, namespace)["a-low"].admitted })
	submit("a-high", "team-a", "high-priority", 1)
	preempted("a-low", "a-high", "high-priority = 100", "prioritization in the ClusterQueue")
}

// pod is what the scenarios of JobSets and TrainJobs read of a pod.
type pod struct {
	Metadata struct {
		Name        string
		Annotations map[string]string
	}
	Spec struct {
		NodeName, Hostname, Subdomain string
		Containers                    []container
	}
	Status struct{ Phase string }
}

type container struct {
	Name          string
	Command, Args []string
	Env           []struct {
		Name, Value string
		ValueFrom   any `json:"valueFrom"`
	}
}

// env is the value of a container's variable (empty if it comes from
// elsewhere), and whether the container has it.
func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// launch is the container's command line, its command and its arguments.
func (c container) launch() string { return strings.Join(append(c.Command, c.Args...), " ") }

// jobSetPods are the pods of a JobSet (of the JobSet of a TrainJob, which
// has its name), which the test expects n of, all Succeeded on the fake GPU
// nodes; and the address of the master, pod 0 of the first Job, by the DNS
// name that JobSet gives it (hostname.subdomain, its headless Service).
func (s *sim) jobSetPods(t *testing.T, namespace, name string, n int) ([]pod, string) {
	t.Helper()
	var list struct{ Items []pod }
	out := kubectl(t, s.cluster, nil, "get", "pods", "-n", namespace, "-l", "jobset.sigs.k8s.io/jobset-name="+name, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list.Items, n, "pods of JobSet %s", name)
	master := ""
	for _, p := range list.Items {
		require.True(t, strings.HasPrefix(p.Spec.NodeName, "gpu-node-"), "pod %s bound to %q", p.Metadata.Name, p.Spec.NodeName)
		require.Equal(t, "Succeeded", p.Status.Phase, "pod %s", p.Metadata.Name)
		require.NotEmpty(t, p.Spec.Hostname, "pod %s has a hostname", p.Metadata.Name)
		require.Equal(t, name, p.Spec.Subdomain, "pod %s is in the JobSet's subdomain", p.Metadata.Name)
		if p.Metadata.Annotations["jobset.sigs.k8s.io/job-index"] == "0" && p.Metadata.Annotations["batch.kubernetes.io/job-completion-index"] == "0" {
			master = p.Spec.Hostname + "." + p.Spec.Subdomain
		}
	}
	require.NotEmpty(t, master, "a pod of JobSet %s has index 0 in Job 0", name)
	kubectl(t, s.cluster, nil, "get", "service", name, "-n", namespace)
	return list.Items, master
}

// seesTorchrun checks that a pod of a JobSet of n pods, whose master is at
// the address master, launches torchrun with what it needs: its launch line,
// with the container's variables put in (a variable from one of the pod's
// annotations as the kubelet would give it: JOB_COMPLETION_INDEX, which the
// Job controller adds, and the variables set from it), has the pod's rank
// (its completion index), the world size (n nodes) and the master's address.
func seesTorchrun(t *testing.T, p pod, c container, n int, master string) {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		from, _ := e.ValueFrom.(map[string]any)
		field, _ := from["fieldRef"].(map[string]any)
		path, _ := field["fieldPath"].(string)
		if key, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
			env[e.Name] = p.Metadata.Annotations[strings.TrimSuffix(key, "']")]
		}
	}
	launch := os.Expand(regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllString(c.launch(), "$${$1}"),
		func(name string) string { return env[name] })
	rank := p.Metadata.Annotations["batch.kubernetes.io/job-completion-index"]
	require.NotEmpty(t, rank, "pod %s has a completion index", p.Metadata.Name)
	require.True(t, strings.Contains(launch, "--node_rank="+rank) || strings.Contains(launch, "--node-rank="+rank),
		"pod %s launches torchrun with its rank %s: %s", p.Metadata.Name, rank, launch)
	require.Contains(t, launch, fmt.Sprintf("--nnodes=%d", n), "pod %s launches torchrun on %d nodes", p.Metadata.Name, n)
	require.Contains(t, launch, master, "pod %s launches torchrun with the master's address", p.Metadata.Name)
}

// An AppWrapper wrapping a JobSet of one indexed replicated job (example
// jobset) runs to Succeeded, and every pod launches torchrun with its rank,
// the world size and the master's address, pod 0's DNS name.
func (s *sim) jobSet(t *testing.T) {
	const namespace, name, pods = "sim-jobset", "jobset-aw", 2
	manifest := s.render(t, cases.Example(t, "jobset"), append([]string{"--set", "jobName=" + name, "--set", "namespace=" + namespace,
		"--set", fmt.Sprintf("numPods=%d", pods)}, runFor("1s")...)...)
	s.submit(t, manifest)
	defer kubectl(t, s.cluster, manifest, "delete", "--wait=true", "-f", "-")
	s.waitPhase(t, namespace, name, "Succeeded", 2*time.Minute)
	s.workloadFinished(t, namespace, name)
	all, master := s.jobSetPods(t, namespace, name, pods)
	for _, p := range all {
		seesTorchrun(t, p, p.Spec.Containers[0], pods, master)
	}
}

// A bare TrainJob (example trainjob) on the ClusterTrainingRuntime
// torch-distributed, queued in Kueue, runs to Complete, and every pod has
// the PET_ variables that the Trainer controller sets for torchrun (the
// number of nodes, processes a node, its rank, the master's address, pod
// 0's DNS name, and port) and launches torchrun with them.
func (s *sim) trainJob(t *testing.T) {
	const namespace, name, nodes = "sim-trainjob", "trainjob", 2
	// The example's volume is a claim that this namespace does not have.
	manifest := s.render(t, cases.Example(t, "trainjob"), append([]string{"--set", "jobName=" + name, "--set", "namespace=" + namespace,
		"--set", fmt.Sprintf("numPods=%d", nodes), "--set", "volumes=null"}, runFor("1s")...)...)
	s.submit(t, manifest)
	defer kubectl(t, s.cluster, manifest, "delete", "--wait=true", "-f", "-")
	s.waitFor(t, namespace, "TrainJob "+name+" Complete", 2*time.Minute, func() bool {
		out := kubectl(t, s.cluster, nil, "get", "trainjob", name, "-n", namespace, "-o", `jsonpath={.status.conditions[?(@.type=="Complete")].status}`)
		return out == "True"
	})
	s.workloadFinished(t, namespace, name)
	all, master := s.jobSetPods(t, namespace, name, nodes)
	for _, p := range all {
		var c container
		for _, each := range p.Spec.Containers {
			if each.Name == "node" {
				c = each
			}
		}
		require.Equal(t, "node", c.Name, "pod %s has the trainer's container", p.Metadata.Name)
		for variable, want := range map[string]string{"PET_NNODES": fmt.Sprint(nodes), "PET_MASTER_ADDR": master} {
			value, _ := c.env(variable)
			require.Equal(t, want, value, "%s of pod %s", variable, p.Metadata.Name)
		}
		for _, variable := range []string{"PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_PORT"} {
			_, ok := c.env(variable)
			require.True(t, ok, "pod %s has %s", p.Metadata.Name, variable)
		}
		seesTorchrun(t, p, c, nodes, master)
		require.Equal(t, "1s", p.Metadata.Annotations["sim.torchwrap.dev/run-for"], "the runtime patch reached pod %s", p.Metadata.Name)
	}
}

// Topology-aware scheduling, in ClusterQueue e2e.TopologyClusterQueue: a job
// whose pods must share a rack (example topology-rack, topology.required: the
// chart annotates every pod template and groups Master and Worker) runs with
// all its pods in one rack; one larger than any rack stays pending, Kueue
// saying why in its Workload's QuotaReserved condition.
func (s *sim) topology(t *testing.T) {
	const namespace = "sim-topology"
	render := func(name string, pods int) []byte {
		return s.render(t, cases.Example(t, "topology-rack"), "--set", "jobName="+name, "--set", "namespace="+namespace,
			"--set", "queueName=topology-queue", "--set", fmt.Sprintf("numPods=%d", pods), "--set", "numGpusPerPod=8",
			"--set", "topology.required="+e2e.RackLabel)
	}

	fits := render("in-rack", e2e.SimRackNodes-1)
	s.submit(t, fits)
	defer kubectl(t, s.cluster, fits, "delete", "--wait=true", "-f", "-")
	s.waitPhase(t, namespace, "in-rack", "Succeeded", 2*time.Minute)
	var list struct{ Items []pod }
	require.NoError(t, json.Unmarshal([]byte(kubectl(t, s.cluster, nil, "get", "pods", "-n", namespace,
		"-l", "training.kubeflow.org/job-name=in-rack", "-o", "json")), &list))
	require.Len(t, list.Items, e2e.SimRackNodes-1)
	racks := map[string]bool{}
	for _, p := range list.Items {
		rack := kubectl(t, s.cluster, nil, "get", "node", p.Spec.NodeName, "-o", "jsonpath={.metadata.labels."+strings.NewReplacer(".", `\.`, "/", `\/`).Replace(e2e.RackLabel)+"}")
		require.NotEmpty(t, rack, "node %s has a rack", p.Spec.NodeName)
		racks[rack] = true
	}
	require.Len(t, racks, 1, "the racks of the pods of in-rack: %v", racks)

	tooLarge := render("too-large", e2e.SimRackNodes+1)
	s.submit(t, tooLarge)
	defer kubectl(t, s.cluster, tooLarge, "delete", "--wait=true", "-f", "-")
	var message string
	s.waitFor(t, namespace, "too-large pending for want of a rack", time.Minute, func() bool {
		out := kubectl(t, s.cluster, nil, "get", "workloads", "-n", namespace, "-o",
			`jsonpath={range .items[?(@.metadata.ownerReferences[0].name=="too-large")]}{.status.conditions[?(@.type=="QuotaReserved")].status}/{.status.conditions[?(@.type=="QuotaReserved")].reason}/{.status.conditions[?(@.type=="QuotaReserved")].message}{end}`)
		status, rest, _ := strings.Cut(out, "/")
		reason, msg, _ := strings.Cut(rest, "/")
		message = msg
		return status == "False" && reason == "Pending" && strings.Contains(msg, "topology")
	})
	t.Logf("too-large: Kueue says: %s", message)
	require.Equal(t, "Suspended", s.appWrapperPhase(t, namespace, "too-large"))
}
