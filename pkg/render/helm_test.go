package render_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/testdata/cases"
)

// helmTemplate renders the chart directory as `helm template chart -f file...`
// does: Helm's install action, client-only, dry-run, with Helm's own reading
// of values files (each over the ones before it) and Helm's own schema
// validation.
func helmTemplate(t *testing.T, files ...string) []byte {
	t.Helper()
	manifest, err := helmRender(t, files...)
	require.NoError(t, err)
	return manifest
}

func helmRender(t *testing.T, files ...string) ([]byte, error) {
	t.Helper()
	return helmRenderChart(t, loadChart(t), files...)
}

// loadChart loads the chart folder as Helm does.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	chrt, err := loader.Load(cases.Path(t, "chart"))
	require.NoError(t, err)
	return chrt
}

// helmRenderChart renders chrt as helmRender renders the chart folder.
func helmRenderChart(t *testing.T, chrt *chart.Chart, files ...string) ([]byte, error) {
	t.Helper()
	vals, err := (&values.Options{ValueFiles: files}).MergeValues(getter.Providers{})
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
	// helm template prints the hooks (helmHook's job) after the manifest.
	manifest := rel.Manifest
	for _, hook := range rel.Hooks {
		manifest += "\n---\n" + hook.Manifest
	}
	return []byte(manifest), nil
}

// generatorObjects are the objects the generator renders from a settings file.
func generatorObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
	return cases.Objects(t, cases.Render(t, file))
}

func TestHelmTemplateGivesTheSameObjects(t *testing.T) {
	for _, file := range cases.ValidSettings(t) {
		t.Run(file, func(t *testing.T) {
			require.Equal(t, cases.Objects(t, helmTemplate(t, file)), generatorObjects(t, file))
		})
	}
}

// helmHook's digest is the job's without the chart's version: a new chart
// that renders the same job does not run it again, and a changed job has
// another digest.
func TestHelmHookDigestLeavesTheChartVersionOut(t *testing.T) {
	file := cases.Path(t, "testdata", "golden", "helm-hook", "settings.yaml")
	changed := filepath.Join(t.TempDir(), "changed.yaml")
	require.NoError(t, os.WriteFile(changed, []byte("numPods: 3\n"), 0o644))
	digest := func(version string, files ...string) string {
		chrt := loadChart(t)
		chrt.Metadata.Version = version
		manifest, err := helmRenderChart(t, chrt, files...)
		require.NoError(t, err)
		objects := cases.Objects(t, manifest)
		require.Len(t, objects, 2)
		require.Equal(t, "ConfigMap", objects[0]["kind"])
		annotations := objects[1]["metadata"].(map[string]any)["annotations"].(map[string]any)
		require.Equal(t, version, annotations["torchwrap.dev/generator-version"])
		return objects[0]["data"].(map[string]any)["digest"].(string)
	}
	require.Equal(t, digest("0.1.0", file), digest("9.9.9", file))
	require.NotEqual(t, digest("0.1.0", file), digest("0.1.0", file, changed))
}

// helm template with the values of testdata/profile/cluster.yaml (what
// generator profile values writes) before the settings file gives the same
// objects as the generator rendering the settings under the profile, for
// every example and starter.
func TestHelmTemplateWithAProfileValuesFileGivesTheSameObjects(t *testing.T) {
	profileFile := cases.Path(t, "testdata", "profile", "cluster.yaml")
	data, err := os.ReadFile(profileFile)
	require.NoError(t, err)
	p, err := profile.Read(profile.Source{Name: profileFile, Data: data})
	require.NoError(t, err)
	vals, err := p.Values()
	require.NoError(t, err)
	data, err = sigsyaml.Marshal(vals)
	require.NoError(t, err)
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(valuesFile, data, 0o644))
	for _, file := range append(cases.Examples(t), cases.Starters(t)...) {
		t.Run(file, func(t *testing.T) {
			in, err := settings.Load(settings.Options{Files: []string{file}})
			require.NoError(t, err)
			in, err = p.Apply(in)
			require.NoError(t, err)
			result, err := render.Render(in, p, nil)
			require.NoError(t, err)
			require.Equal(t, cases.Objects(t, helmTemplate(t, valuesFile, file)), cases.Objects(t, result.Manifest))
		})
	}
}

// Every invalid case that Helm can see is refused by helm template as well:
// by the same schema (chart/values.schema.json) or by the chart's own checks.
// Two cannot be seen by any Helm chart (cases.UnseenByHelm).
func TestHelmRefusesTheInvalidCases(t *testing.T) {
	for _, c := range cases.Invalid(t) {
		t.Run(c.Name, func(t *testing.T) {
			_, err := helmRender(t, c.Settings())
			if reason, ok := cases.UnseenByHelm[c.Name]; ok {
				require.NoError(t, err, "expected Helm not to see it: %s", reason)
				return
			}
			require.Error(t, err)
		})
	}
}
