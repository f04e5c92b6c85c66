package pinned_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/pinned"
)

// make prebuild builds the registry of the helm tests (make integration)
// right after Helm 4, before the sets of the later tiers.
func TestAllBuildsTheRegistryAfterHelm4(t *testing.T) {
	testdata := cases.Path(t, "testdata")
	sets, err := pinned.All(testdata)
	require.NoError(t, err)
	helm4, _, err := pinned.Helm4(testdata)
	require.NoError(t, err)
	registry, version, err := pinned.Registry(testdata)
	require.NoError(t, err)
	require.NotEmpty(t, version)
	require.GreaterOrEqual(t, len(sets), 2)
	require.Equal(t, helm4.Cache, sets[0].Cache)
	require.Equal(t, registry.Cache, sets[1].Cache)
}
