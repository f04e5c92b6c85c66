package render_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"

	"github.com/torchwrap/generator/pkg/golden"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
)

// helmTemplate renders the chart directory as `helm template chart -f file`
// does: Helm's install action, client-only, dry-run, with Helm's own reading
// of values files and Helm's own schema validation.
func helmTemplate(t *testing.T, file string) []byte {
	t.Helper()
	manifest, err := helmRender(t, file)
	require.NoError(t, err)
	return manifest
}

func helmRender(t *testing.T, file string) ([]byte, error) {
	t.Helper()
	chrt, err := loader.Load("../../chart")
	require.NoError(t, err)
	vals, err := (&values.Options{ValueFiles: []string{file}}).MergeValues(getter.Providers{})
	if err != nil {
		return nil, err
	}
	client := action.NewInstall(&action.Configuration{Log: t.Logf})
	client.DryRun = true
	client.DryRunOption = "client"
	client.ClientOnly = true
	client.Replace = true
	client.ReleaseName = "release-name"
	client.Namespace = "default"
	rel, err := client.Run(chrt, vals)
	if err != nil {
		return nil, err
	}
	return []byte(rel.Manifest), nil
}

// parityFiles are the settings files that must render the same with helm
// template as with the generator: every golden case and every example
// (starters of generator init included).
func parityFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/golden/*/settings.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return append(files, golden.Examples(t)...)
}

// generatorObjects are the objects the generator renders from a settings file.
func generatorObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
	in, err := settings.Load(settings.Options{Files: []string{file}})
	require.NoError(t, err)
	ours, err := render.Render(in)
	require.NoError(t, err)
	return golden.Objects(t, ours.Manifest)
}

func TestHelmTemplateGivesTheSameObjects(t *testing.T) {
	for _, file := range parityFiles(t) {
		t.Run(file, func(t *testing.T) {
			require.Equal(t, golden.Objects(t, helmTemplate(t, file)), generatorObjects(t, file))
		})
	}
}

// invalidFiles are the settings files of testdata/invalid; each one's folder
// names its case.
func invalidFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/invalid/*/settings.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// unseenByHelm are the invalid cases that no Helm chart can see, since Helm's
// reading of a values file hides what is wrong with them, with the reason.
var unseenByHelm = map[string]string{
	"duplicate-key": "Helm keeps the last of duplicate keys",
	"two-documents": "Helm 3 reads only the first document; Helm 4 merges them all, the last value winning",
}

// Every invalid case that Helm can see is refused by helm template as well:
// by the same schema (chart/values.schema.json) or by the chart's own checks.
// Two cannot be seen by any Helm chart (unseenByHelm).
func TestHelmRefusesTheInvalidCases(t *testing.T) {
	for _, file := range invalidFiles(t) {
		name := filepath.Base(filepath.Dir(file))
		t.Run(name, func(t *testing.T) {
			_, err := helmRender(t, file)
			if reason, ok := unseenByHelm[name]; ok {
				require.NoError(t, err, "expected Helm not to see it: %s", reason)
				return
			}
			require.Error(t, err)
		})
	}
}
