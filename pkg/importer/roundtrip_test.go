package importer_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/importer"
	"github.com/torchwrap/generator/testdata/cases"
)

// importOne reads a manifest of one job and imports it.
func importOne(t *testing.T, name string, manifest []byte) *importer.Result {
	t.Helper()
	objects, err := importer.Read(name, manifest)
	require.NoError(t, err)
	require.Len(t, objects, 1)
	res, err := importer.Import(objects[0])
	require.NoError(t, err)
	require.NotNil(t, res)
	return res
}

// Every settings file we own, rendered, imports into settings that render
// the same objects: nothing lost, nothing added, no setting refused.
func TestRoundTripOfEverythingWeOwn(t *testing.T) {
	for _, file := range cases.ValidSettings(t) {
		name, _ := filepath.Rel(cases.Path(t), file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			manifest := cases.Render(t, file)
			res := importOne(t, name, manifest)
			assert.Empty(t, res.Lost, "lost")
			assert.Empty(t, res.Added, "added")
			assert.Empty(t, res.Refused, "refused")
			var want map[string]any
			require.NoError(t, sigsyaml.Unmarshal(manifest, &want))
			assert.Equal(t, want, res.Rendered, "the imported settings render another job:\n%s", res.Settings)
		})
	}
}
