//go:build unix

package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/failure"
	"github.com/torchwrap/generator/pkg/local"
)

// podSpec is a pod template whose container pytorch runs script in sh,
// with more of its spec as YAML lines: the container's, then the pod's.
func podSpec(script, container, pod string) string {
	return fmt.Sprintf(`
      template:
        spec:
          containers:
          - name: pytorch
            image: example/train:1
            command: [sh, -c, %q]%s%s`, script, container, pod)
}

// twoPods is a PyTorchJob of a master and a worker, each running its
// script, planned to run in a new folder.
func twoPods(t *testing.T, master, worker string, o local.Options) *local.Plan {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	plan, err := local.Prepare(context.Background(), jobPods(t, master, worker), o)
	require.NoError(t, err)
	return plan
}

// jobPods are the pods of a PyTorchJob of a master and a worker, each
// running its script.
func jobPods(t *testing.T, master, worker string) []local.Pod {
	t.Helper()
	manifest := `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: job}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1` + master + `
    Worker:
      replicas: 1` + worker
	var obj map[string]any
	require.NoError(t, sigsyaml.Unmarshal([]byte(manifest), &obj), manifest)
	data, err := sigsyaml.Marshal(obj)
	require.NoError(t, err)
	job, err := cluster.NewJob(data, "ml")
	require.NoError(t, err)
	pods, err := local.Pods(job)
	require.NoError(t, err)
	return pods
}

// output keeps the lines of a run, each after its pod's label, and the
// setup commands that failed; Run calls line and setup one at a time.
type output struct{ lines, setup []string }

func (o *output) line(l cluster.LogLine) { o.lines = append(o.lines, "["+l.Label+"] "+l.Text) }

func (o *output) failedSetup(e failure.SetupError) { o.setup = append(o.setup, e.String()) }

// Each pod runs in its folder with the controller's variables, its names
// given as addresses; every line comes after its pod's label.
func TestRunSucceeds(t *testing.T) {
	dir := t.TempDir()
	script := `echo "rank $RANK of $WORLD_SIZE, master $MASTER_ADDR:$MASTER_PORT, in $(basename "$PWD"), tmp $(basename "$(dirname "$TMPDIR")")"; printf 'no newline'`
	plan := twoPods(t, podSpec(script, "", ""), podSpec(script, "", ""), local.Options{Dir: dir})
	var out output
	failed, err := plan.Run(context.Background(), out.line, out.failedSetup, others, time.Second)
	require.NoError(t, err)
	require.Empty(t, failed)
	lines := out.lines
	require.ElementsMatch(t, []string{
		"[master-0] rank 0 of 2, master 127.0.1.1:23456, in master-0, tmp master-0", "[master-0] no newline",
		"[worker-0] rank 1 of 2, master 127.0.1.1:23456, in worker-0, tmp worker-0", "[worker-0] no newline",
	}, lines)
}

// A setup command of a launch script that fails is said, and the launch
// goes on, as in a pod.
func TestRunSaysASetupCommandFailed(t *testing.T) {
	script := "echo \"Pod ${RANK} of ${WORLD_SIZE}\"\ncd /no/such/folder\necho done"
	plan := twoPods(t, podSpec(script, "", ""), podSpec("true", "", ""), local.Options{})
	var out output
	failed, err := plan.Run(context.Background(), out.line, out.failedSetup, others, time.Second)
	require.NoError(t, err)
	require.Empty(t, failed)
	require.Len(t, out.setup, 1)
	require.Regexp(t, `^master-0: setup command "cd /no/such/folder" failed: sh: 2: cd: (can't cd to /no/such/folder|/no/such/folder: No such file or directory); the launch went on`, out.setup[0])
	require.Contains(t, out.lines, "[master-0] done")
}

// others is how long the other pods have to end on their own once one
// failed, in the tests whose pods all end: long, since Run goes on as soon
// as they have.
const others = time.Minute

// A container that fails stops the others, once they have had their while
// to end on their own; its failure says what it printed last and its exit
// code, and the pod stopped has none.
func TestRunFailure(t *testing.T) {
	plan := twoPods(t, podSpec("sleep 300", "", ""), podSpec(`echo "Traceback (most recent call last):"; echo "ValueError: bad batch size"; exit 3`, "", ""), local.Options{})
	var out output
	failed, err := plan.Run(context.Background(), out.line, out.failedSetup, 100*time.Millisecond, time.Second)
	require.NoError(t, err)
	require.Len(t, failed, 1)
	require.Equal(t, "worker-0", failed[0].Member)
	require.Equal(t, int32(3), *failed[0].ExitCode)
	require.Equal(t, "worker-0 (container pytorch) exited 3: ValueError: bad batch size", failed[0].String())
}

// A pod that fails after another, on its own, within the others' while, is
// not stopped: its failure is said too. Here the worker exits first, and
// the master once it has.
func TestRunWaitsForTheOtherPods(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "worker-done")
	worker := fmt.Sprintf(`echo "Traceback (most recent call last):"; echo "RuntimeError: Connection closed by peer"; touch %s; exit 1`, done)
	master := fmt.Sprintf(`while [ ! -e %s ]; do sleep 0.01; done; exit 3`, done)
	plan := twoPods(t, podSpec(master, "", ""), podSpec(worker, "", ""), local.Options{})
	failed, err := plan.Run(context.Background(), (&output{}).line, (&output{}).failedSetup, others, time.Second)
	require.NoError(t, err)
	var said []string
	for _, f := range failed {
		said = append(said, f.String())
	}
	require.ElementsMatch(t, []string{"worker-0 (container pytorch) exited 1: RuntimeError: Connection closed by peer", "master-0 (container pytorch) exited 3"}, said)
}

// pids reads the process ids a script wrote to a file, waiting for them.
func pids(t *testing.T, file string, n int) []int {
	t.Helper()
	var list []int
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(file)
		list = nil
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			list = append(list, pid)
		}
		return len(list) == n
	}, 10*time.Second, 10*time.Millisecond)
	return list
}

// requireGone checks that no process of the group remains, once the
// processes killed have been reaped.
func requireGone(t *testing.T, pgid int) {
	t.Helper()
	require.Eventually(t, func() bool { return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) }, 5*time.Second, 10*time.Millisecond,
		"process group %d is left", pgid)
}

// Stopped (Ctrl-C, a timeout), a pod's processes all end, and those they
// started: SIGTERM, then SIGKILL for one that ignores it.
func TestRunStopsEveryProcess(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pids")
	// Each pod's shell writes its process id, $$ (which the kubelet's
	// expansion writes $$$$).
	script := fmt.Sprintf(`trap '' TERM; sleep 300 & echo $$$$ >> %[1]s; sh -c 'trap "" TERM; sleep 300' & wait`, file)
	plan := twoPods(t, podSpec(script, "", ""), podSpec(script, "", ""), local.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *local.Plan)
	go func() {
		failed, err := plan.Run(ctx, (&output{}).line, (&output{}).failedSetup, others, 100*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, failed, "a stopped run is no failure")
		close(done)
	}()
	groups := pids(t, file, 2)
	cancel()
	<-done
	for _, pgid := range groups {
		requireGone(t, pgid)
	}
}

// A pod whose process exits leaves nothing it started behind.
func TestRunLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pids")
	script := fmt.Sprintf(`sleep 300 >/dev/null 2>&1 & echo $$$$ >> %s`, file)
	plan := twoPods(t, podSpec(script, "", ""), podSpec(script, "", ""), local.Options{})
	failed, err := plan.Run(context.Background(), (&output{}).line, (&output{}).failedSetup, others, time.Second)
	require.NoError(t, err)
	require.Empty(t, failed)
	for _, pgid := range pids(t, file, 2) {
		requireGone(t, pgid)
	}
}

// What the job needs and this machine does not give is refused at once,
// every reason, before anything is made.
func TestPrepareRefuses(t *testing.T) {
	manifest := []byte(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: job}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            command: [sh, -c, "true"]
            env:
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: hf, key: token}}
            volumeMounts: [{name: data, mountPath: /data}]
          - name: sidecar
            image: example/sidecar
          volumes:
          - name: data
            persistentVolumeClaim: {claimName: datasets}
`)
	job, err := cluster.NewJob(manifest, "ml")
	require.NoError(t, err)
	pods, err := local.Pods(job)
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = local.Prepare(context.Background(), pods, local.Options{Dir: dir})
	require.EqualError(t, err, `the job cannot run here, and nothing was started:
  the claim "datasets" (volume data, mounted at /data) is not here: map it to a folder with --map pvc/datasets=DIR
  master-0 (container pytorch) reads the secret "hf", which is not here: map it with --map secret/hf=PATH (a folder with a file per key, or a file of KEY=VALUE lines), or read it from the cluster with --from-cluster
  master-0 (container sidecar) has no command: it runs its image's entrypoint, which this machine does not have`)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// A mapped claim and Secret: the claim's folder at its mount path for the
// run (a link, gone after it), the Secret's KEY=VALUE lines as variables
// and as files; an emptyDir a folder of the run.
func TestRunMapped(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	require.NoError(t, os.Mkdir(data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "input.txt"), []byte("42\n"), 0o644))
	secret := filepath.Join(base, "token.env")
	require.NoError(t, os.WriteFile(secret, []byte("# the token\ntoken=s3cret\n"), 0o600))
	mount := func(name string) string { return filepath.Join(base, "mnt", name) }
	pod := `
          volumes:
          - {name: data, persistentVolumeClaim: {claimName: datasets}}
          - {name: creds, secret: {secretName: hf}}
          - {name: scratch, emptyDir: {}}`
	container := fmt.Sprintf(`
            env:
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: hf, key: token}}
            volumeMounts:
            - {name: data, mountPath: %q}
            - {name: creds, mountPath: %q}
            - {name: scratch, mountPath: %q}`, mount("data"), mount("creds"), mount("scratch"))
	script := fmt.Sprintf(`echo "$TOKEN $(cat %s/input.txt) $(cat %s/token)"; echo "from $RANK" > %s/$RANK`, mount("data"), mount("creds"), mount("scratch"))
	run := filepath.Join(base, "run")
	plan := twoPods(t, podSpec(script, container, pod), podSpec(script, container, pod),
		local.Options{Dir: run, Maps: map[string]string{"pvc/datasets": data, "secret/hf": secret}})
	var out output
	failed, err := plan.Run(context.Background(), out.line, out.failedSetup, others, time.Second)
	require.NoError(t, err)
	require.Empty(t, failed, out.lines)
	require.Contains(t, out.lines, "[master-0] s3cret 42 s3cret")
	require.Contains(t, out.lines, "[worker-0] s3cret 42 s3cret")
	_, err = os.Lstat(filepath.Join(base, "mnt"))
	require.ErrorIs(t, err, os.ErrNotExist, "the mount paths and the folders made for them are gone")
	written, err := os.ReadFile(filepath.Join(run, "volumes", "scratch", "1"))
	require.NoError(t, err)
	require.Equal(t, "from 1\n", string(written))
}

// An optional key that is not given leaves its variable unset, and the
// plan says so.
func TestPrepareOptional(t *testing.T) {
	container := `
            env:
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: hf, key: token, optional: true}}`
	plan := twoPods(t, podSpec("true", container, ""), podSpec("true", "", ""), local.Options{})
	require.Contains(t, plan.Notes, `optional and not given here, so unset: TOKEN (key token of the secret "hf")`)
	require.NotContains(t, strings.Join(plan.Pods[0].Main[0].Env, "\n"), "TOKEN=")
}

// A mount path this machine already has, as another folder, is refused
// before any process starts, and what was made for the run is removed.
func TestRunMountPathTaken(t *testing.T) {
	base := t.TempDir()
	taken := filepath.Join(base, "taken")
	require.NoError(t, os.Mkdir(taken, 0o755))
	marker := filepath.Join(base, "started")
	container := fmt.Sprintf(`
            volumeMounts: [{name: scratch, mountPath: %q}]`, taken)
	pod := `
          volumes: [{name: scratch, emptyDir: {}}]`
	plan := twoPods(t, podSpec("touch "+marker, container, pod), podSpec("touch "+marker, "", ""), local.Options{})
	failed, err := plan.Run(context.Background(), (&output{}).line, (&output{}).failedSetup, others, time.Second)
	require.Empty(t, failed)
	require.ErrorContains(t, err, "a pod mounts a volume at "+taken+", which this machine already has (and it is not ")
	require.NoFileExists(t, marker, "no process started")
	require.DirExists(t, taken, "the machine's folder is left as it was")
}

// A projected volume of ConfigMaps the run makes itself (a workspace's)
// is one folder of all their keys; one it neither makes nor is given is
// refused before anything starts.
func TestRunProjectedConfigMaps(t *testing.T) {
	base := t.TempDir()
	mount := filepath.Join(base, "mnt", "parts")
	pod := `
          volumes:
          - name: parts
            projected:
              sources:
              - configMap: {name: job-workspace-0}
              - configMap: {name: job-workspace-1}`
	container := fmt.Sprintf(`
            volumeMounts:
            - {name: parts, mountPath: %q, readOnly: true}`, mount)
	script := fmt.Sprintf(`cat %s/part-*`, mount)
	given := map[string]map[string]string{"job-workspace-0": {"part-00": "one "}, "job-workspace-1": {"part-01": "two"}}
	plan := twoPods(t, podSpec(script, container, pod), podSpec(script, container, pod), local.Options{Dir: filepath.Join(base, "run"), ConfigMaps: given})
	var out output
	failed, err := plan.Run(context.Background(), out.line, out.failedSetup, others, time.Second)
	require.NoError(t, err)
	require.Empty(t, failed, out.lines)
	require.ElementsMatch(t, []string{"[master-0] one two", "[worker-0] one two"}, out.lines)

	pods := jobPods(t, podSpec(script, container, pod), podSpec(script, container, pod))
	_, err = local.Prepare(context.Background(), pods, local.Options{Dir: filepath.Join(base, "other"), ConfigMaps: map[string]map[string]string{"job-workspace-0": {"part-00": "one"}}})
	require.ErrorContains(t, err, `the configmap "job-workspace-1" (volume parts, mounted at `+mount+`) is not here`)
}

// torchrun is given --tee 2 (PET_TEE), so that each process's standard
// error comes after its local rank; unless the container sets its own.
func TestRunTeesTorchrun(t *testing.T) {
	script := `echo "PET_TEE=$PET_TEE"`
	plan := twoPods(t, podSpec(script, "", ""), podSpec(script, "\n            env: [{name: PET_TEE, value: '0'}]", ""), local.Options{})
	var out output
	failed, err := plan.Run(context.Background(), out.line, out.failedSetup, others, time.Second)
	require.NoError(t, err)
	require.Empty(t, failed)
	require.ElementsMatch(t, []string{"[master-0] PET_TEE=2", "[worker-0] PET_TEE=0"}, out.lines)
}

// A second run of the machine waits for the first to end, told who holds
// the machine; then it holds it, and says so to the next.
func TestHoldMachineWaitsForTheRunBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.lock")
	release, err := local.HoldMachine(path, "PyTorchJob first", func(string) { t.Error("the first run waited") })
	require.NoError(t, err)

	told := make(chan string, 1)
	held := make(chan func())
	go func() {
		second, err := local.HoldMachine(path, "JobSet second", func(holder string) { told <- holder })
		if err != nil {
			t.Error(err)
		}
		held <- second
	}()
	require.Equal(t, fmt.Sprintf("pid %d, PyTorchJob first", os.Getpid()), <-told)
	select {
	case <-held:
		t.Fatal("the second run held the machine while the first did")
	case <-time.After(200 * time.Millisecond):
	}
	release()
	second := <-held
	defer second()
	holder, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("pid %d, JobSet second\n", os.Getpid()), string(holder))
}
