package chart_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
	"github.com/torchwrap/generator/testdata/cases"
)

// Every default in values.yaml is valid by itself, and the chart refuses
// nothing that the schema accepts for lack of a default.
func TestValuesFileDefaultsAreValid(t *testing.T) {
	data, err := os.ReadFile("values.yaml")
	require.NoError(t, err)
	in, err := settings.Load(settings.Options{Files: []string{"values.yaml"}})
	require.NoError(t, err, string(data))
	v, err := validate.Default()
	require.NoError(t, err)
	in.Values["jobName"] = "my-job"
	in.Values["containerImage"] = "busybox"
	require.Empty(t, v.Validate(in.Values))
}

// helm lint --strict chart -f examples/helloworld.settings.yaml is clean:
// nothing of warning severity or worse.
func TestHelmLintStrict(t *testing.T) {
	vals, err := (&values.Options{ValueFiles: []string{cases.Example(t, "helloworld")}}).MergeValues(getter.Providers{})
	require.NoError(t, err)
	linter := lint.AllWithKubeVersion(".", vals, "default", nil)
	for _, m := range linter.Messages {
		t.Log(m)
		require.Less(t, m.Severity, support.WarningSev, m.Error())
	}
}
