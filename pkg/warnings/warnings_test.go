package warnings_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/warnings"
)

// Each warning is a diagnostic of warning severity at the key it concerns;
// settings without risk give none. (The golden case warnings pins the texts.)
func TestWarningsAreWarningsAtTheirKeys(t *testing.T) {
	risky := map[string]any{
		"jobKind":                      "PyTorchJob",
		"environmentVariables":         []any{map[string]any{"name": "HF_TOKEN", "value": "hf_x"}, map[string]any{"name": "EPOCHS", "value": "3"}},
		"failureGracePeriodDuration":   "25h",
		"admissionGracePeriodDuration": "24h",
		"schedulerName":                "default-scheduler",
		"bypassCoscheduler":            true,
		"runPolicy":                    map[string]any{"cleanUpPolicy": "All"},
		"mainProgram":                  "torchrun train.py",
	}
	var paths []string
	for _, d := range warnings.Check(risky) {
		require.Equal(t, diag.Warning, d.Severity, d.Message)
		require.NotEmpty(t, d.Message)
		paths = append(paths, d.Path.String())
	}
	require.Equal(t, []string{
		"environmentVariables[0].value", "failureGracePeriodDuration", "schedulerName",
		"bypassCoscheduler", "runPolicy.cleanUpPolicy", "mainProgram",
	}, paths)

	require.Empty(t, warnings.Check(map[string]any{
		"jobKind": "PyTorchJob", "mainProgram": "train.py", "schedulerName": "sakkara",
		"environmentVariables": []any{map[string]any{"name": "HF_TOKEN", "secret": map[string]any{"name": "s", "key": "k"}}},
	}))
}
