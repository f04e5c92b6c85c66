package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/testdata/cases"
)

// batchInputs copies every golden case and example into one folder, each
// under a name of its own (golden cases are all called settings.yaml).
func batchInputs(t *testing.T) (dir string, want map[string]string) {
	t.Helper()
	dir = t.TempDir()
	want = map[string]string{}
	for _, c := range cases.Golden(t) {
		copyFile(t, c.Settings(), filepath.Join(dir, c.Name+".yaml"))
		want[c.Name] = readFile(t, filepath.Join(c.Dir, "expected.yaml"))
	}
	for _, e := range cases.Examples(t) {
		name := strings.TrimSuffix(filepath.Base(e), ".yaml")
		copyFile(t, e, filepath.Join(dir, name+".yaml"))
		want[name] = render(t, "-f", e)
	}
	return dir, want
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.WriteFile(to, []byte(readFile(t, from)), 0o644))
}

// A batch writes, for every file, exactly what rendering it alone writes.
func TestBatchOutputIsOneAtATimeOutput(t *testing.T) {
	in, want := batchInputs(t)
	files, err := filepath.Glob(filepath.Join(in, "*.yaml"))
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "manifests")
	stdout, errOut, code := generator(t, nil, append([]string{"render", "--out-dir", out}, files...)...)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Empty(t, stdout)
	require.True(t, strings.HasSuffix(errOut, "rendered "+strconv.Itoa(len(files))+" file(s) into "+out+"\n"), errOut)
	written, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, written, len(want))
	for name, manifest := range want {
		require.Equal(t, manifest, readFile(t, filepath.Join(out, name+".yaml")), name)
	}
}

// An invalid file is reported with its name; the others are still written.
func TestBatchWritesTheValidFiles(t *testing.T) {
	in := t.TempDir()
	copyFile(t, helloworld, filepath.Join(in, "good.yaml"))
	copyFile(t, cases.Path(t, "testdata", "invalid", "jobname-pattern", "settings.yaml"), filepath.Join(in, "bad.yaml"))
	out := t.TempDir()
	stdout, errOut, code := generator(t, nil, "render", "--out-dir", out, filepath.Join(in, "good.yaml"), filepath.Join(in, "bad.yaml"))
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, stdout)
	require.Equal(t, render(t, "-f", helloworld), readFile(t, filepath.Join(out, "good.yaml")))
	require.NoFileExists(t, filepath.Join(out, "bad.yaml"))
	require.Equal(t, filepath.Join(in, "bad.yaml")+`:1:10: jobName: "My_Job" is not a valid job name: use lowercase letters, digits and '-', start with a letter, end with a letter or digit, at most 50 characters; use "my-job" instead
1 problem in the settings; `+filepath.Join(out, "bad.yaml")+` was not written
Error: 1 of 2 file(s) could not be rendered; the others were written
`, errOut)
}

// -f files and --set values apply to every file of the batch.
func TestBatchAppliesSharedSettings(t *testing.T) {
	in := t.TempDir()
	base := filepath.Join(in, "base.yaml")
	require.NoError(t, os.WriteFile(base, []byte("containerImage: busybox\nnumPods: 3\n"), 0o644))
	for _, name := range []string{"a", "b"} {
		require.NoError(t, os.WriteFile(filepath.Join(in, name+".yaml"), []byte("jobName: job-"+name+"\n"), 0o644))
	}
	out := t.TempDir()
	_, errOut, code := generator(t, nil, "render", "-f", base, "--set", "numGpusPerPod=2", "--out-dir", out, filepath.Join(in, "a.yaml"), filepath.Join(in, "b.yaml"))
	require.Equal(t, cli.ExitOK, code, errOut)
	for _, name := range []string{"a", "b"} {
		require.Equal(t, render(t, "-f", base, "-f", filepath.Join(in, name+".yaml"), "--set", "numGpusPerPod=2"), readFile(t, filepath.Join(out, name+".yaml")))
	}
}

func TestBatchUsageErrors(t *testing.T) {
	in := t.TempDir()
	a, b := filepath.Join(in, "a", "settings.yaml"), filepath.Join(in, "b", "settings.yaml")
	for _, f := range []string{a, b} {
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		copyFile(t, helloworld, f)
	}
	out := filepath.Join(t.TempDir(), "out")
	for name, tc := range map[string]struct {
		args    []string
		message string
	}{
		"two files, one name": {[]string{"--out-dir", out, a, b}, "would both be written to " + filepath.Join(out, "settings.yaml")},
		"no files":            {[]string{"--out-dir", out}, "--out-dir needs the settings files"},
		"files without a dir": {[]string{a, b}, "need --out-dir DIR"},
		"-o and --out-dir":    {[]string{"--out-dir", out, "-o", "x.yaml", a}, "cannot be used together"},
		"standard input":      {[]string{"--out-dir", out, "-"}, "standard input"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errOut, code := generator(t, nil, append([]string{"render"}, tc.args...)...)
			require.Equal(t, cli.ExitUsage, code, errOut)
			require.Contains(t, errOut, tc.message)
			require.NoDirExists(t, out, "nothing is written")
		})
	}
}
