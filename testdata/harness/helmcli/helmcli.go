// Package helmcli runs the helm commands of Helm 3 and Helm 4 as processes,
// as a user runs them, for the harness's tests: Helm 3's is the harness
// module's tool (go tool helm, the one make lint and make dist run), Helm 4's
// is built from the wrapper module testdata/helm4 into the user's cache
// folder (package pinned).
package helmcli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/pinned"
)

// CLI is a helm command, run as a process with an empty Helm home of its own
// (cache, configuration, data, and so its registry logins) and no
// kubeconfig.
type CLI struct {
	// Name is "Helm 3" or "Helm 4", for messages and subtests.
	Name string
	// Path is the helm binary.
	Path string
	env  []string
}

// New is the helm command at path, with a Helm home in a temporary folder of
// t's.
func New(t testing.TB, name, path string) CLI {
	home := t.TempDir()
	env := append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "kubeconfig"))
	return CLI{Name: name, Path: path, env: env}
}

// NewEnv is the helm command at path with this process's environment and
// env ("NAME=value") over it: no Helm home of its own but what env says, for
// a test that sets up the environment of another program that runs helm.
func NewEnv(name, path string, env ...string) CLI {
	return CLI{Name: name, Path: path, env: append(os.Environ(), env...)}
}

// WithEnv is h with the environment variables env ("NAME=value") set over
// its own.
func (h CLI) WithEnv(env ...string) CLI {
	h.env = append(append([]string(nil), h.env...), env...)
	return h
}

// Run runs helm with args. err is set if helm exits with an error; stderr
// then holds helm's message.
func (h CLI) Run(args ...string) (stdout, stderr string, err error) {
	return h.Exec("", "", args...)
}

// Exec runs helm with args in the folder dir (the current one if empty),
// with stdin as its standard input.
func (h CLI) Exec(dir, stdin string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(h.Path, args...)
	cmd.Env = h.env
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// Must runs helm with args, which must succeed, and returns its standard
// output.
func (h CLI) Must(t testing.TB, args ...string) string {
	t.Helper()
	out, errOut, err := h.Run(args...)
	require.NoError(t, err, "%s: helm %s: %s%s", h.Name, strings.Join(args, " "), out, errOut)
	return out
}

// Template is helm template chart -f file..., each file over the ones before
// it, which must succeed.
func (h CLI) Template(t testing.TB, chart string, files ...string) []byte {
	t.Helper()
	args := []string{"template", chart}
	for _, file := range files {
		args = append(args, "-f", file)
	}
	return []byte(h.Must(t, args...))
}

// once holds the result of finding or building a helm command.
type once struct {
	sync.Once
	path string
	err  error
}

var helm3Once, helm4Once once

// Helm3 is the helm command of the harness module's tool directive, the one
// make lint runs: go tool -n builds it, or finds it in Go's build cache, and
// names it.
func Helm3(t testing.TB) CLI {
	t.Helper()
	helm3Once.Do(func() {
		cmd := exec.Command("go", "tool", "-n", "helm")
		cmd.Dir = cases.Path(t, "testdata", "harness")
		out, err := cmd.Output()
		if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
			err = errors.New(string(exitErr.Stderr))
		}
		helm3Once.path, helm3Once.err = strings.TrimSpace(string(out)), err
	})
	require.NoError(t, helm3Once.err, "go tool -n helm")
	return New(t, "Helm 3", helm3Once.path)
}

// Helm4 is the helm command of Helm 4, built from the module in
// testdata/helm4 into the user's cache folder by the first test that needs
// it (a cold build takes minutes), or found there.
func Helm4(t testing.TB) CLI {
	t.Helper()
	helm4Once.Do(func() { helm4Once.path, helm4Once.err = BuildHelm4(cases.Path(t, "testdata"), t.Logf) })
	require.NoError(t, helm4Once.err, "building Helm 4 from testdata/helm4")
	return New(t, "Helm 4", helm4Once.path)
}

// Both are Helm3 and Helm4, in that order.
func Both(t testing.TB) []CLI {
	t.Helper()
	return []CLI{Helm3(t), Helm4(t)}
}

// BuildHelm4 builds (or reuses) the helm command of pinned.Helm4 and checks
// that it is the Helm 4 that testdata/helm4 pins.
func BuildHelm4(testdata string, logf func(string, ...any)) (string, error) {
	set, version, err := pinned.Helm4(testdata)
	if err != nil {
		return "", err
	}
	return set.BuildPinned(testdata, version, logf)
}
