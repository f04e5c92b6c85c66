//go:build e2e && linux

package e2e_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
)

// workspaceFiles is the folder the scenario workspace ships: a program, a
// module it imports, a small data file, and a .env that must stay here.
var workspaceFiles = map[string]string{
	// One write a line, as allreduce.py: the ranks of a pod share its
	// output, unbuffered, where print writes the newline apart.
	"train.py": `import os
import sys
from lib.util import answer
with open("data/greeting.txt") as f:
    greeting = f.read().strip()
sys.stdout.write(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}: answer {answer()}, {greeting}, .env here: {os.path.exists('.env')}\n")
`,
	"lib/__init__.py":   "",
	"lib/util.py":       "def answer():\n    return 42\n",
	"data/greeting.txt": "hello from the first version\n",
	".env":              "TOKEN=not-to-be-shipped\n",
}

// workspaceLine is a line of the program of workspaceFiles, or of the
// launch script's unpacking, after its pod's label.
var workspaceLine = regexp.MustCompile(`(?m)^\[[a-z]+-\d+\] (rank \d of 4: .*|Workspace sha256:[0-9a-f]{12} \(\d+ files\) unpacked into the working folder)$`)

// A folder shipped with the job (--workspace), on the process nodes: the
// program, its module and its data run from the pods' working folder on
// every rank, and .env is left out and said; edited here and submitted
// again, the new code runs, and status tells the two apart; run --local
// prints the same lines. JobSet and TrainJob ship it as the PyTorchJob does.
// After delete, and after the job is deleted by another means (Kubernetes'
// garbage collector), no ConfigMap of the workspace is left. A folder over
// the limit, and one with a link out of it, are refused with nothing made.
func (s *sim) runWorkspace(t *testing.T) {
	folder := t.TempDir()
	for name, content := range workspaceFiles {
		path := filepath.Join(folder, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	// What the scenario's jobs made, whose names begin with "workspace",
	// in a namespace where the other scenarios' jobs come and go meanwhile.
	carried := func() []string {
		return strings.Fields(kubectl(t, s.cluster, nil, "get", "configmaps", "-n", runNamespace, "-l", "torchwrap.dev/workspace-of", "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}`))
	}
	everything := func() string {
		var ours []string
		for _, object := range strings.Fields(kubectl(t, s.cluster, nil, "get", "configmaps,appwrappers,pytorchjobs,jobsets,trainjobs,pods", "-n", runNamespace, "-o", "name")) {
			if _, name, _ := strings.Cut(object, "/"); strings.HasPrefix(name, "workspace") {
				ours = append(ours, object)
			}
		}
		return strings.Join(ours, "\n")
	}
	before := everything()
	require.Empty(t, carried(), "no workspace before the scenario")

	const name = "workspace"
	args := []string{"--workspace", folder, "--set", "mainProgram=train.py"}
	r := s.processJob(t, name, args...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "workspace: left out as they look like secrets: .env;")
	require.Regexp(t, `workspace: .*, 4 files \(\d+ B\), packed into 1 ConfigMap \(sha256:[0-9a-f]{12}\)`, r.stderr)
	owner := kubectl(t, s.cluster, nil, "get", "configmap", "-n", runNamespace, name+"-workspace-0", "-o", `jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}`)
	require.Equal(t, "AppWrapper/"+name, owner, "the job owns its workspace")
	there := s.workspaceLines(t, name)
	require.Len(t, there, 6, "a line from each of 4 ranks, and the unpacking of each of 2 pods")
	for _, line := range there {
		require.Regexp(t, `^\[[a-z]+-0\] (rank \d of 4: answer 42, hello from the first version, \.env here: False|Workspace .*)$`, line)
	}
	first := s.workspaceStatus(t, name, folder)

	// run --local prints the same lines.
	here := newLocal(t).run(t, append([]string{"--set", "jobName=" + name, "--set", "namespace=" + runNamespace}, args...)...)
	require.Equal(t, 0, here.code, here.stderr)
	hereLines := workspaceLine.FindAllString(here.stdout, -1)
	slices.Sort(hereLines)
	require.Equal(t, there, hereLines, "the lines of run --local and of the process nodes")

	// Edited and submitted again: the new code runs.
	require.NoError(t, os.WriteFile(filepath.Join(folder, "lib", "util.py"), []byte("def answer():\n    return 43\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(folder, "data", "greeting.txt"), []byte("hello from the second version\n"), 0o644))
	r = s.processJob(t, name, args...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout+r.stderr, "in place of the one before it")
	for _, line := range s.workspaceLines(t, name) {
		require.Regexp(t, `^\[[a-z]+-0\] (rank \d of 4: answer 43, hello from the second version, \.env here: False|Workspace .*)$`, line)
	}
	second := s.workspaceStatus(t, name, folder)
	require.NotEqual(t, first, second, "status tells the two submits apart")

	// The other kinds that run a launch script ship it too.
	for kind, more := range map[string][]string{
		"jobset":   {"--set", "jobKind=JobSet"},
		"trainjob": {"--set", "jobKind=TrainJob", "--set", "wrapper=none", "--set", "priority=null"},
	} {
		job := name + "-" + kind
		r := s.processJob(t, job, append(args, more...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Len(t, s.workspaceLines(t, job), 6, job)
		r = s.generate(t, folder, "delete", job, "-n", runNamespace, "--kubeconfig", "ADMIN")
		require.Equal(t, 0, r.code, r.stderr)
	}

	// delete leaves nothing of it.
	require.Equal(t, []string{runNamespace + "/" + name + "-workspace-0"}, carried())
	r = s.generate(t, folder, "delete", name, "-n", runNamespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, carried(), "after delete")
	require.Equal(t, before, everything(), "every object of the scenario's jobs, before and after")

	// Deleted by another means, the job's workspace goes with it.
	const other = "workspace-gc"
	r = s.generate(t, folder, append([]string{"submit", "-f", cases.Path(t, "testdata", "sim", "allreduce.settings.yaml"), "--kubeconfig", "ADMIN",
		"--set", "jobName=" + other, "--set", "namespace=" + runNamespace, "--set", "wrapper=none"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{runNamespace + "/" + other + "-workspace-0"}, carried())
	kubectl(t, s.cluster, nil, "delete", "pytorchjob", "-n", runNamespace, other, "--wait=true")
	s.waitFor(t, runNamespace, "the garbage collector deleting the workspace of "+other, time.Minute, func() bool { return len(carried()) == 0 })

	// What submit takes (without --wait; the test's log has each command's
	// time): a typical project, and a folder at the limit, in 8 ConfigMaps.
	for job, dir := range map[string]string{"workspace-typical": typicalProject(t), "workspace-at-limit": atTheLimit(t)} {
		r := s.generate(t, folder, "submit", "-f", cases.Path(t, "testdata", "sim", "allreduce.settings.yaml"), "--kubeconfig", "ADMIN",
			"--set", "jobName="+job, "--set", "namespace="+runNamespace, "--set", "mainProgram=train.py", "--workspace", dir)
		require.Equal(t, 0, r.code, r.stderr)
		t.Logf("generator submit %s:\n%s%s", job, r.stdout, r.stderr)
		r = s.generate(t, folder, "delete", job, "-n", runNamespace, "--kubeconfig", "ADMIN")
		require.Equal(t, 0, r.code, r.stderr)
	}
	require.Empty(t, carried(), "after delete")

	// Refused before anything is sent.
	big := t.TempDir()
	noise := make([]byte, 9<<20)
	_, _ = rand.Read(noise)
	require.NoError(t, os.WriteFile(filepath.Join(big, "train.py"), []byte(workspaceFiles["train.py"]), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(big, "weights.pt"), noise, 0o644))
	r = s.processJob(t, "workspace-too-large", "--workspace", big, "--set", "mainProgram=train.py")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "is too large to ship with the job")
	require.Contains(t, r.stderr, "the largest files: weights.pt (9.0 MiB), train.py")
	require.Contains(t, r.stderr, "nothing was sent")

	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "elsewhere.py"), filepath.Join(folder, "shared.py")))
	r = s.processJob(t, "workspace-link", args...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "has symbolic links that point outside it, which the pods would not have: shared.py -> /")
	// The pods of workspace-gc go after it, as the collector gets to them.
	s.waitFor(t, runNamespace, "every object of the scenario's jobs as before it, none made for the refused jobs", time.Minute, func() bool { return everything() == before })
}

// workspaceLines are the lines of the workspace's program and of its
// unpacking in a job's logs, sorted.
func (s *sim) workspaceLines(t *testing.T, name string) []string {
	t.Helper()
	r := s.generate(t, cases.Path(t), "logs", name, "-n", runNamespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	lines := workspaceLine.FindAllString(r.stdout, -1)
	slices.Sort(lines)
	return lines
}

// workspaceStatus is the workspace line of a job's status, which must name
// the folder it was packed from.
func (s *sim) workspaceStatus(t *testing.T, name, folder string) string {
	t.Helper()
	r := s.generate(t, cases.Path(t), "status", name, "-n", runNamespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	line := regexp.MustCompile(`(?m)^  workspace: .*$`).FindString(r.stdout)
	require.Regexp(t, `^  workspace: sha256:[0-9a-f]{12} \(4 files, \d+ B\) from `+regexp.QuoteMeta(folder)+`$`, line, r.stdout)
	return line
}

// typicalProject is a folder of 2 MB in 200 files: 190 of Python, 10 KB
// each, and 10 of data that do not compress (as pkg/workspace's benchmark).
func typicalProject(t *testing.T) string {
	dir := t.TempDir()
	line := 0
	for i := range 190 {
		var code strings.Builder
		for code.Len() < 10_000 {
			line++
			fmt.Fprintf(&code, "    value_%d = step(batch_%d, %d)  # line %d\n", line%97, line%89, line*7919%10_007, line)
		}
		path := filepath.Join(dir, fmt.Sprintf("pkg%d", i%10), fmt.Sprintf("module%d.py", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(code.String()), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	for i := range 10 {
		data := make([]byte, 10_000)
		_, _ = rand.Read(data)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data", fmt.Sprintf("sample%d.bin", i)), data, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte(workspaceFiles["train.py"]), 0o644))
	return dir
}

// atTheLimit is a folder of random bytes just under the limit.
func atTheLimit(t *testing.T) string {
	dir := t.TempDir()
	noise := make([]byte, 8*(1<<20-1<<10)-64<<10)
	_, _ = rand.Read(noise)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data.bin"), noise, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte(workspaceFiles["train.py"]), 0o644))
	return dir
}
