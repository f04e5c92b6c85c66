//go:build e2e && linux

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/e2e"
)

// localRuns run generator run --local in a new folder: the settings of
// testdata/sim/allreduce.settings.yaml, its programs' claim mapped to
// testdata/sim, with the tools of the process nodes (the mended torchrun of
// Debian's PyTorch) first on PATH. mark is in the generator's environment,
// so in every process it starts.
type localRuns struct {
	generator, tools, sim, mark string
}

// localMark is the variable that marks the processes of the local runs.
const localMark = "TORCHWRAP_LOCAL_TEST"

func newLocal(t *testing.T) *localRuns {
	tools, err := e2e.WriteTools()
	require.NoError(t, err)
	return &localRuns{generator: cases.BuildGenerator(t), tools: tools, sim: cases.Path(t, "testdata", "sim"), mark: localMark + "=" + strconv.Itoa(os.Getpid())}
}

// command is generator run --local in dir, with args after the flags that
// give the settings.
func (l *localRuns) command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	if len(args) == 0 || args[0] != "-f" {
		args = append([]string{"-f", filepath.Join(l.sim, "allreduce.settings.yaml"), "--map", "pvc/sim-programs=" + l.sim}, args...)
	}
	cmd := exec.CommandContext(ctx, l.generator, append([]string{"run", "--local"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+l.tools+":"+os.Getenv("PATH"), l.mark)
	return cmd
}

// run runs generator run --local to its end.
func (l *localRuns) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := l.command(ctx, t.TempDir(), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	t.Logf("generator run --local %s: exit %d in %s\n%s%s", strings.Join(args, " "), r.code, time.Since(start).Round(time.Millisecond), r.stdout, r.stderr)
	return r
}

// localRanks reads the allreduce lines of generator run's output.
func localRanks(t *testing.T, out string) []rankLine {
	t.Helper()
	var lines []rankLine
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		m := logLine.FindStringSubmatch(line)
		require.NotNil(t, m, "a line of generator run without its pod's label: %q", line)
		if r := allreduceLine.FindStringSubmatch(m[2]); r != nil {
			lines = append(lines, readRankLine(m[1], r, out))
		}
	}
	return lines
}

// left are the processes of this machine whose environment has the mark.
func (l *localRuns) left(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, []byte("\x00"+l.mark+"\x00")) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			found = append(found, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// generator run --local on this machine's PyTorch (gloo, on CPU): the job
// of the process nodes' scenarios, 2 pods of 2 processes, of each kind that
// runs here, to exit 0 with every rank's sum right; a rank that raises
// gives exit 1 and its traceback, in a pod of 8 processes too, and when 7
// of them raise, the rank torchrun names with its own message; Ctrl-C
// leaves no process behind; a claim not mapped is refused before anything
// starts; and a new user's first job, from generator init.
func TestRunLocal(t *testing.T) {
	l := newLocal(t)
	for name, args := range map[string][]string{
		"pytorchjob":           nil,
		"jobset":               {"--set", "jobKind=JobSet"},
		"trainjob":             {"--set", "jobKind=TrainJob", "--set", "wrapper=none", "--set", "priority=null"},
		"t9k-torchrun-mode":    {"--set", "jobKind=PyTorchTrainingJob"},
		"t9k-script-mode":      {"--set", "jobKind=PyTorchTrainingJob", "--set", "setupCommands[0]=echo script mode"},
		"pytorchjob-elastic":   {"--set", "elastic.minPods=1", "--set", "elastic.maxPods=2", "--set", "torchrun.extraOptions[0]=--rdzv_conf=last_call_timeout=300"},
		"pytorchjob-3-of-4":    {"--set", "numPods=4", "--pods", "3"},
		"pytorchjob-in-setups": {"--set", "setupCommands[0]=mkdir -p run", "--set", "setupCommands[1]=cd run"},
	} {
		t.Run(name, func(t *testing.T) {
			r := l.run(t, args...)
			require.Equal(t, 0, r.code, r.stderr)
			n := 4
			if name == "pytorchjob-3-of-4" {
				n = 6
			}
			allRanks(t, localRanks(t, r.stdout), n)
			require.Contains(t, r.stderr, "runs here, as processes of this machine: its programs stand for the image ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126")
			require.Contains(t, r.stderr, "no NVIDIA GPU here (the job asks 2 a pod): its processes run on CPU, so the program must choose a backend that runs there (gloo)")
		})
	}

	// A rank that raises: its errors after its local rank, as torchrun
	// --tee 2 writes them.
	t.Run("failure", func(t *testing.T) {
		r := l.run(t, "--set", "mainProgram=/tmp/programs/allreduce.py --raise-rank 3")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "failed here: rank 3 (worker-0, local rank 1) exited 1: ZeroDivisionError: float division by zero\n  | [default1]:Traceback (most recent call last):\n")
		require.Contains(t, r.stdout, "[worker-0] [default1]:ZeroDivisionError: float division by zero\n")
	})

	// One pod of 8 processes on CPU, of which one raises: the line names
	// that rank and its error, not a rank that torchrun stopped after it.
	t.Run("eight-processes-one-raises", func(t *testing.T) {
		r := l.run(t, "--set", "numPods=1", "--set", "torchrun.nprocPerNode=8", "--set", "mainProgram=/tmp/programs/allreduce.py --raise-rank 5")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "failed here: rank 5 (master-0, local rank 5) exited 1: ZeroDivisionError: float division by zero\n  | [default5]:Traceback (most recent call last):\n")
	})

	// Seven processes of 8 raise a RuntimeError of three lines, each after
	// a line of its own: the line names the rank torchrun names as the
	// root cause (its first observed failure), one that raised, not one
	// that it stopped, with that rank's own message, whole, and not a line
	// of another process; an excerpt, if any (torchrun's summary of 7
	// processes leaves the traceback above the lines a failure keeps), is
	// that rank's own lines.
	t.Run("eight-processes-seven-raise", func(t *testing.T) {
		r := l.run(t, "--set", "numPods=1", "--set", "torchrun.nprocPerNode=8", "--set", "mainProgram=/tmp/programs/allreduce.py --raise-all-but 0")
		require.Equal(t, 1, r.code)
		root := regexp.MustCompile(`\[master-0\] Root Cause \(first observed failure\):\n\[master-0\] \[0\]:\n(?:\[master-0\] .*\n)*?\[master-0\]   rank      : ([1-7]) \(local_rank: [1-7]\)\n`).FindStringSubmatch(r.stdout)
		require.NotNil(t, root, "torchrun's root cause, a rank that raised")
		rank := root[1]
		// The others torchrun lists: those that failed before it stopped
		// the rest, as many as the machine's load let fail by then.
		others := ""
		switch n := strings.Count(r.stdout, "[master-0]   rank      : ") - 1; n {
		case 0:
		case 1:
			others = " (and 1 other process)"
		default:
			others = fmt.Sprintf(" (and %d other processes)", n)
		}
		said := regexp.MustCompile(`failed here: (.*)\n((?:  \| .*\n)*)`).FindStringSubmatch(r.stderr)
		require.NotNil(t, said)
		require.Equal(t, fmt.Sprintf("rank %s (master-0, local rank %s) exited 1: RuntimeError: rank %s: the loss is NaN; "+
			"at step 0, batch 0; check the learning rate and the data%s", rank, rank, rank, others), said[1], "the rank's own message, whole")
		for _, line := range strings.Split(strings.TrimSuffix(said[2], "\n"), "\n") {
			require.True(t, line == "" || strings.HasPrefix(line, "  | [default"+rank+"]:"), "a line of another process in the excerpt: %q", line)
		}
	})

	// A setup command that fails, in a job whose program does not need it:
	// the job succeeds here as on the cluster, and run says which command
	// failed in which pod, as submit --wait does.
	t.Run("setup-goes-on", func(t *testing.T) {
		r := l.run(t, "--set", "setupCommands[0]=cd /tmp/no-such-folder")
		require.Equal(t, 0, r.code, r.stderr)
		allRanks(t, localRanks(t, r.stdout), 4)
		for _, pod := range []string{"master-0", "worker-0"} {
			require.Contains(t, r.stderr, pod+`: setup command "cd /tmp/no-such-folder" failed: sh: 2: cd: can't cd to /tmp/no-such-folder; the launch went on (setupErrexit: true stops the pod at a failed setup command)`+"\n")
		}
		require.Contains(t, r.stderr, "succeeded here: 2 pods, though a setup command failed in 2 of them (above)\n")
	})

	t.Run("missing-claim", func(t *testing.T) {
		dir := t.TempDir()
		cmd := l.command(context.Background(), dir, "-f", cases.Path(t, "testdata", "sim", "allreduce.settings.yaml"), "--dir", "run")
		out, err := cmd.CombinedOutput()
		require.Error(t, err)
		require.Equal(t, 1, cmd.ProcessState.ExitCode())
		require.Contains(t, string(out), `the claim "sim-programs" (volume programs, mounted at /tmp/programs) is not here: map it to a folder with --map pvc/sim-programs=DIR`)
		_, err = os.Stat(filepath.Join(dir, "run"))
		require.ErrorIs(t, err, os.ErrNotExist, "nothing was started, and the run's folder was not kept")
	})

	t.Run("ctrl-c", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		dir := t.TempDir()
		cmd := l.command(ctx, dir, "--set", "mainProgram=/tmp/programs/allreduce.py --hold 300")
		out, err := os.Create(filepath.Join(dir, "output"))
		require.NoError(t, err)
		defer out.Close()
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		read := func() string {
			data, err := os.ReadFile(out.Name())
			require.NoError(t, err)
			return string(data)
		}
		require.Eventually(t, func() bool { return strings.Count(read(), "allreduce: rank") == 4 }, 2*time.Minute, 100*time.Millisecond,
			"every rank at work")
		require.NotEmpty(t, l.left(t))
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		require.Error(t, cmd.Wait())
		require.Equal(t, 130, cmd.ProcessState.ExitCode(), read())
		require.Contains(t, read(), "stopped: every pod's processes were ended")
		require.Eventually(t, func() bool { return len(l.left(t)) == 0 }, 10*time.Second, 100*time.Millisecond, "processes left: %v", l.left(t))
	})

	t.Run("new-user", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.Command(l.generator, "init")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		path := filepath.Join(dir, "settings.yaml")
		starter, err := os.ReadFile(path)
		require.NoError(t, err)
		// The user's edit: their own program, in the folder, instead of the
		// clone of the example.
		edited := strings.Replace(string(starter), "  - git clone https://github.com/dbarnett/python-helloworld\n  - cd python-helloworld\n", "  - echo my first job\n", 1)
		edited = strings.Replace(edited, "mainProgram: helloworld.py", "mainProgram: hello.py", 1)
		require.NotEqual(t, string(starter), edited, "the starter has the lines a new user edits")
		require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.py"), []byte(`import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([1])
dist.all_reduce(t)
print(f"hello from rank {dist.get_rank()} of {t.item()}")
`), 0o644))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		run := l.command(ctx, dir, "-f", "settings.yaml")
		var stdout, stderr bytes.Buffer
		run.Stdout, run.Stderr = &stdout, &stderr
		start := time.Now()
		require.NoError(t, run.Run(), "%s%s", &stdout, &stderr)
		t.Logf("a new user's first job ran here in %s:\n%s%s", time.Since(start).Round(time.Millisecond), &stdout, &stderr)
		require.Contains(t, stdout.String(), "[master-0] hello from rank 0 of 2\n")
		require.Contains(t, stdout.String(), "[worker-0] hello from rank 1 of 2\n")
	})
	require.Empty(t, l.left(t), "processes of the local runs left")
}
