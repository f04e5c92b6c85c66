package validate_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

// The schema is compiled once per process, for the verdict and for the
// explanations alike: explaining the first invalid settings compiles nothing
// more, so it allocates about what explaining the next ones does (counted in
// allocations, which do not depend on the machine's load).
func TestExplainingCompilesNothingMore(t *testing.T) {
	model, err := schema.Model()
	require.NoError(t, err)
	v, err := validate.Compile(validate.ValidatorSchema, func() (*schema.Schema, error) { return model, nil })
	require.NoError(t, err)
	in, err := settings.Load(settings.Options{Files: []string{cases.Path(t, "chart", "values.yaml"), cases.Path(t, "testdata", "invalid", "many-problems", "settings.yaml")}})
	require.NoError(t, err)
	allocs := func() uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		require.NotEmpty(t, v.Validate(in.Values))
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	first, second := allocs(), allocs()
	require.Less(t, first, second*3/2, "the first invalid settings cost %d allocations, the second %d", first, second)
}
