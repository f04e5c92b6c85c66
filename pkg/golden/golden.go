// Package golden compares test output with files checked into testdata, and
// rewrites those files when the tests run with -update (make golden).
//
// Every test package of the module imports it, so that go test ./... -update
// gives every test binary the flag.
package golden

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Update is set by -update: tests rewrite their expected files instead of
// comparing with them.
var Update = flag.Bool("update", false, "rewrite golden and generated files instead of comparing with them")

// Check compares got with the file at path, or writes got there under -update.
func Check(t *testing.T, path string, got []byte) {
	t.Helper()
	if *Update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing expected file; run make golden and review the diff")
	require.Equal(t, string(want), string(got), "%s is out of date; run make golden and review the diff", path)
}

// Objects parses a YAML stream into its documents, skipping empty ones, so that
// two manifests can be compared as objects rather than as text.
func Objects(t *testing.T, stream []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(stream))
	var objects []map[string]any
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return objects
		}
		require.NoError(t, err, "not a valid YAML stream:\n%s", stream)
		if obj != nil {
			objects = append(objects, obj)
		}
	}
}

// Examples lists the settings files that every check treats as examples: the
// files of examples/ and the starters of generator init in testdata/init, as
// seen from a package's folder (pkg/<name>).
func Examples(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../examples/*.settings.yaml", "../../testdata/init/*.settings.yaml"} {
		matches, err := filepath.Glob(pattern)
		require.NoError(t, err)
		require.NotEmpty(t, matches, pattern)
		files = append(files, matches...)
	}
	return files
}
