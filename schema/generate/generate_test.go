package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
)

// Every file made from the schema is what generate makes now: a stale one
// means the schema changed without make generate.
func TestGeneratedFilesAreFresh(t *testing.T) {
	files, err := generate(cases.Path(t))
	require.NoError(t, err)
	require.Len(t, files, 5)
	for name, want := range files {
		got, err := os.ReadFile(cases.Path(t, name))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s is stale: run make generate and review the diff", filepath.ToSlash(name))
	}
}
