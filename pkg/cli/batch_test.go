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
