package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/failure"
)

// Grace is how long a stopped process has between SIGTERM and SIGKILL.
const Grace = 5 * time.Second

// Run runs the plan's pods: each pod's init containers in turn, then its
// containers at once, every process in a process group of its own, each
// line of its output and errors given to line as a line of its pod's log
// (one call at a time, whole lines). When a process fails, the other pods
// have a while (others) to end on their own, and say their own failures:
// the pod whose rank failed first may end after those that lost it. Then,
// or when ctx ends, every process is stopped: SIGTERM to its group, SIGKILL
// after grace. A process that ends leaves nothing behind: its group is
// killed. Run returns the failures, in the order they ended, none when
// every pod succeeded; the mount paths it made are gone when it returns. A
// setup command that fails in a container's launch script, as the shell
// says it, is given to setup too.
func (p *Plan) Run(ctx context.Context, line func(cluster.LogLine), setup func(failure.SetupError), others, grace time.Duration) ([]failure.Failure, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	undo, err := p.make()
	defer undo()
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	width := 0
	for _, pod := range p.Pods {
		width = max(width, len(pod.Label()))
	}
	o := &output{line: line, setup: setup}
	var (
		mu       sync.Mutex
		failures []failure.Failure
		wg       sync.WaitGroup
	)
	// ended is closed once every pod has ended.
	ended := make(chan struct{})
	failed := func(f failure.Failure) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			// Stopped: no failure of its own.
			return
		}
		if len(failures) == 0 {
			go func() {
				select {
				case <-time.After(others):
				case <-ended:
				}
				stop()
			}()
		}
		failures = append(failures, f)
	}
	for _, pod := range p.Pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			template := cluster.LogLine{Pod: pod.Pod.Pod.Name, Label: pod.Label(), Member: pod.Member, Width: width}
			for _, proc := range pod.Init {
				if f := runProcess(ctx, pod, proc, &lineWriter{out: o, template: template}, grace); f != nil {
					failed(*f)
					return
				}
			}
			var containers sync.WaitGroup
			for _, proc := range pod.Main {
				w := &lineWriter{out: o, template: template}
				if launch, ok := failure.LaunchOf(proc.Argv, nil); ok {
					w.launch = &launch
				}
				containers.Go(func() {
					if f := runProcess(ctx, pod, proc, w, grace); f != nil {
						failed(*f)
					}
				})
			}
			containers.Wait()
		}()
	}
	wg.Wait()
	close(ended)
	return failures, nil
}

// make makes the run's folders (each pod's with links to the files of the
// project), the Secrets and ConfigMaps written out, and the mount paths;
// undo removes the mount paths and the folders it made for them.
func (p *Plan) make() (undo func(), err error) {
	var made []string
	undo = func() {
		for _, path := range slices.Backward(made) {
			os.Remove(path)
		}
	}
	var project []os.DirEntry
	if p.source != "" {
		if project, err = os.ReadDir(p.source); err != nil {
			return undo, err
		}
	}
	for _, pod := range p.Pods {
		if err := os.MkdirAll(filepath.Join(pod.Dir, "tmp"), 0o755); err != nil {
			return undo, err
		}
		for _, e := range project {
			source := filepath.Join(p.source, e.Name())
			if e.Name() == "tmp" || strings.HasPrefix(pod.Dir+string(filepath.Separator), source+string(filepath.Separator)) {
				continue
			}
			if err := os.Symlink(source, filepath.Join(pod.Dir, e.Name())); err != nil {
				return undo, err
			}
		}
	}
	for _, w := range p.writes {
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			return undo, err
		}
		for key, value := range w.values {
			if err := os.WriteFile(filepath.Join(w.dir, key), []byte(value), 0o600); err != nil {
				return undo, err
			}
		}
	}
	for _, l := range p.links {
		if err := os.MkdirAll(l.target, 0o755); err != nil {
			return undo, err
		}
		if same(l.path, l.target) {
			continue
		}
		if _, err := os.Lstat(l.path); err == nil {
			return undo, fmt.Errorf("a pod mounts a volume at %s, which this machine already has (and it is not %s): move it away, or map the volume to it", l.path, l.target)
		}
		// The folders above the mount path that are missing, the highest
		// first: undo removes them, after the link.
		var parents []string
		for dir := filepath.Dir(l.path); !exists(dir); dir = filepath.Dir(dir) {
			parents = append([]string{dir}, parents...)
		}
		made = append(made, parents...)
		err := os.MkdirAll(filepath.Dir(l.path), 0o755)
		if err == nil {
			err = os.Symlink(l.target, l.path)
		}
		if err != nil {
			return undo, fmt.Errorf("a pod mounts a volume at %s, which this run cannot make here (%v); run as a user who can, or change the mount path in the settings", l.path, err)
		}
		made = append(made, l.path)
	}
	return undo, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// same tells whether two paths are the same folder.
func same(a, b string) bool {
	x, errA := os.Stat(a)
	y, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(x, y)
}

// runProcess runs a container's process to its end, or until ctx ends;
// its failure, nil when it exited 0 or was stopped.
func runProcess(ctx context.Context, pod PodPlan, proc Process, w *lineWriter, grace time.Duration) *failure.Failure {
	if ctx.Err() != nil {
		return nil
	}
	cmd := exec.Command(proc.Argv[0], proc.Argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = proc.Dir, environment(proc.Env, pod.Dir), w, w
	cmd.SysProcAttr = sysProcAttr()
	// A process that ended and left a child holding its output: the group
	// is killed once Wait returns, which it does this long after.
	cmd.WaitDelay = time.Second
	base := failure.Failure{Pod: pod.Pod.Pod.Name, Member: pod.Label(), Container: proc.Container, Reason: "Error", At: time.Now()}
	if err := cmd.Start(); err != nil {
		f := base
		code := int32(127)
		f.ExitCode, f.Message = &code, err.Error()
		w.line(err.Error())
		f.SetLines(w.last)
		return &f
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		killGroup(cmd.Process.Pid, false)
		select {
		case err = <-done:
		case <-time.After(grace):
			killGroup(cmd.Process.Pid, true)
			err = <-done
		}
		killGroup(cmd.Process.Pid, true)
		return nil
	}
	killGroup(cmd.Process.Pid, true)
	w.flush()
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) {
		return nil
	}
	f := base
	code := exitCode(exit.ProcessState)
	f.ExitCode, f.At = &code, time.Now()
	f.SetLines(w.last)
	return &f
}

// environment is a process's: the user's own, but for the variables of
// distributed PyTorch the user may have set, then TMPDIR, the pod's own,
// and tee, then the container's.
func environment(env []string, podDir string) []string {
	var all []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !distributed(name) {
			all = append(all, kv)
		}
	}
	return append(append(all, "TMPDIR="+filepath.Join(podDir, "tmp"), tee), env...)
}

// tee is torchrun's --tee 2, as the variable torchrun reads it from: each
// process's standard error goes to a file of its own, which torchrun
// writes on, each line after the process's local rank ([default1]:), so
// that a failure's message is made of its process's own lines, on torch
// 1.13 too, which does not prefix them. Its standard output is left as it
// is: torchrun tails the two files apart, so a line the process printed
// before its error could come after it. A container's own PET_TEE, or a
// --tee of its command line, is taken instead.
const tee = "PET_TEE=2"

// distributed tells the variables torchrun and the controllers set, which
// a pod must not take from the user's shell.
func distributed(name string) bool {
	switch name {
	case "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "JOB_COMPLETION_INDEX":
		return true
	}
	return strings.HasPrefix(name, "PET_") || strings.HasPrefix(name, "TORCHELASTIC_")
}

// output takes every pod's lines, and the setup commands that failed, one
// at a time.
type output struct {
	mu    sync.Mutex
	line  func(cluster.LogLine)
	setup func(failure.SetupError)
}

// lineWriter gives a process's output to the run's, a line at a time as a
// line of its pod's log, and keeps its last lines, for its failure's cause.
type lineWriter struct {
	out      *output
	template cluster.LogLine
	// launch is the process's launch script, nil when it runs none.
	launch *failure.Launch
	part   []byte
	last   []string
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.part = append(w.part, b...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.line(string(w.part[:i]))
		w.part = w.part[i+1:]
	}
}

func (w *lineWriter) line(text string) {
	l := w.template
	l.Text = text
	w.out.mu.Lock()
	w.out.line(l)
	if w.launch != nil {
		if e, ok := w.launch.Error(l.Pod, l.Label, text); ok {
			w.out.setup(e)
		}
	}
	w.out.mu.Unlock()
	w.last = append(w.last, text)
	if len(w.last) > failure.CauseLines {
		w.last = w.last[1:]
	}
}

// flush writes the end of a last line without a newline.
func (w *lineWriter) flush() {
	if len(w.part) > 0 {
		w.line(string(w.part))
		w.part = nil
	}
}
