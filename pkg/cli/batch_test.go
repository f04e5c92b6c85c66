package cli_test

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/testdata/cases"
)

// batchInputs lists every golden case and example, where they are, and the
// manifest each renders to alone, by the path of its output below the
// repository, the folder that holds them all: the golden cases are all called
// settings.yaml, each in a folder of its own.
func batchInputs(t *testing.T) (files []string, want map[string]string) {
	t.Helper()
	root := cases.Path(t)
	want = map[string]string{}
	output := func(file string) string {
		rel, err := filepath.Rel(root, file)
		require.NoError(t, err)
		return rel
	}
	for _, c := range cases.Golden(t) {
		files = append(files, c.Settings())
		want[output(c.Settings())] = readFile(t, filepath.Join(c.Dir, "expected.yaml"))
	}
	for _, e := range cases.Examples(t) {
		files = append(files, e)
		want[output(e)] = render(t, "-f", e)
	}
	return files, want
}

// A batch writes, for every file, exactly what rendering it alone writes, at
// its path below the folder that holds them all.
func TestBatchOutputIsOneAtATimeOutput(t *testing.T) {
	files, want := batchInputs(t)
	out := filepath.Join(t.TempDir(), "manifests")
	stdout, errOut, code := generator(t, nil, append([]string{"render", "--out-dir", out}, files...)...)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Empty(t, stdout)
	require.True(t, strings.HasSuffix(errOut, "rendered "+strconv.Itoa(len(files))+" file(s) into "+out+"\n"), errOut)
	written := 0
	require.NoError(t, filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written++
		}
		return err
	}))
	require.Equal(t, len(want), written)
	for name, manifest := range want {
		require.Equal(t, manifest, readFile(t, filepath.Join(out, name)), name)
	}
}
