package render_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/testdata/cases"
)

// The chart's checks refuse settings in two ways, from one list of problems:
// Helm's users get a fail, one "path: message" a line; the generator gets the
// problems as data (listProblems). Both say the same: for every invalid case
// whose problems come from the chart's checks, Helm's error holds each
// problem the generator reads, in the same order.
func TestChartChecksTellHelmWhatTheyTellTheGenerator(t *testing.T) {
	var checked int
	for _, c := range cases.Invalid(t) {
		file := c.Settings()
		in, err := settings.Load(settings.Options{Files: []string{file}})
		if err != nil || !isChartRefusal(t, in) {
			continue // refused before the chart: by the loader or the schema
		}
		t.Run(c.Name, func(t *testing.T) {
			problems, err := render.ChartProblems(chartValues(t, in))
			require.NoError(t, err)
			require.NotEmpty(t, problems, "the schema accepts it, so the chart's checks must refuse it")
			requireHelmFailsWith(t, file, problems)
		})
		checked++
	}
	require.Positive(t, checked)
}

// A problem without a path is written as the message alone. The one the
// chart makes, for text its YAML cannot carry, is refused first by the
// generator's validator, but not by Helm's.
func TestChartProblemWithoutPathIsTheMessageAlone(t *testing.T) {
	file := cases.Path(t, "testdata", "invalid", "control-character-escaped", "settings.yaml")
	in, err := settings.Load(settings.Options{Files: []string{file}})
	require.NoError(t, err)
	problems, err := render.ChartProblems(chartValues(t, in))
	require.NoError(t, err)
	require.Equal(t, []string{"a setting holds a control character (U+007F to U+009F, U+FFFE or U+FFFF) that the manifest cannot carry; remove it"}, problems)
	requireHelmFailsWith(t, file, problems)
}

// requireHelmFailsWith requires helm template to fail on file with the chart
// problems problems, one a line, in this order.
func requireHelmFailsWith(t *testing.T, file string, problems []string) {
	t.Helper()
	_, err := helmRender(t, file)
	require.Error(t, err)
	for _, problem := range problems {
		require.Contains(t, err.Error(), problem)
	}
	require.True(t, strings.HasSuffix(err.Error(), ": "+strings.Join(problems, "\n")), "Helm: %v\ngenerator: %q", err, problems)
}
