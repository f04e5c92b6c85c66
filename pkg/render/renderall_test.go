package render_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
	"github.com/torchwrap/generator/testdata/cases"
)

// RenderAll gives every input what Render gives it, whether the input is
// valid, refused by the schema, or refused by the chart in the middle of the
// batch.
func TestRenderAllIsRenderForEach(t *testing.T) {
	files := cases.AllSettings(t)
	var ins []*settings.Input
	var names []string
	for _, file := range files {
		in, err := settings.Load(settings.Options{Files: []string{file}})
		if err != nil {
			continue // a loading error: RenderAll never sees the file
		}
		ins = append(ins, in)
		names = append(names, file)
	}
	outcomes := render.RenderAll(ins, nil)
	require.Len(t, outcomes, len(ins))
	var refusedByChart, rendered int
	for i, in := range ins {
		want, wantErr := render.Render(in, nil, nil)
		got := outcomes[i]
		if wantErr != nil {
			require.EqualError(t, got.Err, wantErr.Error(), names[i])
			require.Nil(t, got.Result, names[i])
			if isChartRefusal(t, in) {
				refusedByChart++
			}
			continue
		}
		require.NoError(t, got.Err, names[i])
		require.Equal(t, string(want.Manifest), string(got.Result.Manifest), names[i])
		require.Equal(t, want.Warnings, got.Result.Warnings, names[i])
		rendered++
	}
	require.Positive(t, rendered)
	require.Positive(t, refusedByChart, "some inputs pass the schema and are refused by the chart")
}

// isChartRefusal tells whether in passes the schema, so that its refusal
// came from the chart's own checks.
func isChartRefusal(t *testing.T, in *settings.Input) bool {
	t.Helper()
	validator, err := validate.Default()
	require.NoError(t, err)
	return len(validator.Validate(chartValues(t, in))) == 0
}

// chartValues are the settings of in over the chart's defaults, as the chart
// sees them.
func chartValues(t *testing.T, in *settings.Input) chartutil.Values {
	t.Helper()
	c, err := render.Chart()
	require.NoError(t, err)
	values, err := chartutil.CoalesceValues(c, in.Values)
	require.NoError(t, err)
	return values
}
