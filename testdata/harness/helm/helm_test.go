package helm_test

// The chart as Helm's users run it: the helm commands of Helm 3 and Helm 4
// (package helmcli), helm package with both, and the chart pushed to an OCI
// registry and rendered from there (registry_test.go).

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/helmcli"
)

// chartDir is the chart folder.
func chartDir(t *testing.T) string { return cases.Path(t, "chart") }

// generatorObjects are the objects the generator renders from a settings file.
func generatorObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
	return cases.Objects(t, cases.Render(t, file))
}

// helm template with Helm 3 and with Helm 4 gives the same objects as the
// generator for every golden case, example and starter.
func TestHelmTemplateGivesTheSameObjects(t *testing.T) {
	for _, helm := range helmcli.Both(t) {
		t.Run(helm.Name, func(t *testing.T) {
			for _, file := range cases.ValidSettings(t) {
				t.Run(file, func(t *testing.T) {
					t.Parallel()
					require.Equal(t, generatorObjects(t, file), cases.Objects(t, helm.Template(t, chartDir(t), file)))
				})
			}
		})
	}
}

// helm template with Helm 3 and with Helm 4, given the values file that
// generator profile values writes for testdata/profile/cluster.yaml before the
// settings file, gives the same objects as generator render --profile with
// that profile, for every example and starter.
func TestHelmTemplateWithAProfileValuesFileGivesTheSameObjects(t *testing.T) {
	generator := cases.BuildGenerator(t)
	clusterProfile := cases.Path(t, "testdata", "profile", "cluster.yaml")
	values := filepath.Join(t.TempDir(), "values.yaml")
	cases.Run(t, nil, generator, "profile", "values", clusterProfile, "-o", values)
	for _, helm := range helmcli.Both(t) {
		t.Run(helm.Name, func(t *testing.T) {
			for _, file := range append(cases.Examples(t), cases.Starters(t)...) {
				t.Run(file, func(t *testing.T) {
					t.Parallel()
					rendered := cases.Run(t, nil, generator, "render", "-f", file, "--profile", clusterProfile)
					require.Equal(t, cases.Objects(t, rendered), cases.Objects(t, helm.Template(t, chartDir(t), values, file)))
				})
			}
		})
	}
}

// Helm 4 refuses every invalid case that Helm 3 refuses, for the same reason:
// the values file does not parse, the schema refuses it (the schema errors
// themselves are not compared: a failed allOf names one of its failed
// branches, not always the same one), or the chart's own checks fail with the
// same message. The cases Helm cannot see (unseenByHelm) render.
func TestHelm4RefusesTheInvalidCases(t *testing.T) {
	helm3, helm4 := helmcli.Helm3(t), helmcli.Helm4(t)
	for _, c := range cases.Invalid(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := helm4.Run("template", chartDir(t), "-f", c.Settings())
			if reason, ok := cases.UnseenByHelm[c.Name]; ok {
				require.NoError(t, err, "expected Helm 4 not to see it (%s): %s", reason, errOut)
				require.NotEmpty(t, cases.Objects(t, []byte(out)))
				return
			}
			require.Error(t, err, "Helm 4 renders it:\n%s", out)
			_, errOut3, err3 := helm3.Run("template", chartDir(t), "-f", c.Settings())
			require.Error(t, err3, "Helm 3 renders it")
			require.Equal(t, refusal(errOut3), refusal(errOut), "Helm 3: %s\nHelm 4: %s", errOut3, errOut)
		})
	}
}

var (
	// failed to parse FILE: [cannot unmarshal yaml document: ]MESSAGE, the
	// middle part from Helm 4 only.
	parseError = regexp.MustCompile(`failed to parse \S+: (?:cannot unmarshal yaml document: )?(.*)`)
	// execution error at (torchwrap/templates/FILE:LINE:COLUMN): MESSAGE
	chartError = regexp.MustCompile(`(?s)execution error at \([^)]*\): (.*)`)
)

// refusal is why helm refused a values file, from its error message.
func refusal(message string) string {
	// The helm command adds a hint after the message.
	message, _, _ = strings.Cut(message, "\n\nUse --debug flag")
	switch {
	case strings.Contains(message, "values don't meet the specifications of the schema(s)"):
		return "the schema"
	}
	if m := parseError.FindStringSubmatch(message); m != nil {
		return "no parse: " + m[1]
	}
	if m := chartError.FindStringSubmatch(message); m != nil {
		return "the chart: " + strings.TrimSpace(m[1])
	}
	return "something else: " + message
}

// Helm 4 reads every document of a values file, merging them; Helm 3 reads the
// first. The two-documents case renders, with a different job name.
func TestHelm4MergesTheDocumentsOfAValuesFile(t *testing.T) {
	file := cases.Path(t, "testdata", "invalid", "two-documents", "settings.yaml")
	name := func(objects []map[string]any) any {
		require.Len(t, objects, 1)
		return objects[0]["metadata"].(map[string]any)["name"]
	}
	require.Equal(t, "my-job", name(cases.Objects(t, helmcli.Helm3(t).Template(t, chartDir(t), file))), "Helm 3")
	require.Equal(t, "other", name(cases.Objects(t, helmcli.Helm4(t).Template(t, chartDir(t), file))), "Helm 4")
}

// helm lint --strict with Helm 4 finds nothing of warning severity or worse,
// as make lint checks with Helm 3.
func TestHelm4LintStrict(t *testing.T) {
	out, errOut, err := helmcli.Helm4(t).Run("lint", "--strict", chartDir(t), "-f", cases.Example(t, "helloworld"))
	require.NoError(t, err, "%s%s", out, errOut)
	require.NotRegexp(t, `\[(WARNING|ERROR)\]`, out+errOut)
	require.Contains(t, out, "1 chart(s) linted, 0 chart(s) failed")
}

// helm package, with Helm 3 and with Helm 4, gives a chart archive that holds
// the chart's files unchanged and no Go file, and that renders every golden
// case and example to the same objects as the generator.
func TestHelmPackageRendersTheSameObjects(t *testing.T) {
	for _, helm := range []func(testing.TB) helmcli.CLI{helmcli.Helm3, helmcli.Helm4} {
		helm := helm(t)
		t.Run(helm.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, errOut, err := helm.Run("package", chartDir(t), "-d", dir)
			require.NoError(t, err, "%s%s", out, errOut)
			archives, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
			require.NoError(t, err)
			require.Len(t, archives, 1, out)
			checkPackage(t, archives[0])
			for _, file := range cases.ValidSettings(t) {
				t.Run(file, func(t *testing.T) {
					t.Parallel()
					require.Equal(t, generatorObjects(t, file), cases.Objects(t, helm.Template(t, archives[0], file)))
				})
			}
		})
	}
}

// checkPackage checks a chart archive: every file in the folder torchwrap/,
// none a Go file, each the same as in the chart folder (Chart.yaml, which
// helm package writes anew, as YAML), and among them every file the generator
// embeds, and values.schema.json.
func checkPackage(t *testing.T, archive string) {
	t.Helper()
	files := untar(t, archive)
	for name, data := range files {
		require.NotEqual(t, ".go", filepath.Ext(name), "%s holds a Go file", archive)
		rel, ok := strings.CutPrefix(name, "torchwrap/")
		require.True(t, ok, "%s holds %s, outside torchwrap/", archive, name)
		want, err := os.ReadFile(filepath.Join(chartDir(t), rel))
		require.NoError(t, err, "%s holds %s, not in the chart folder", archive, name)
		if rel == "Chart.yaml" {
			var got, wantYAML map[string]any
			require.NoError(t, yaml.Unmarshal(data, &got))
			require.NoError(t, yaml.Unmarshal(want, &wantYAML))
			require.Equal(t, wantYAML, got, name)
			continue
		}
		require.Equal(t, string(want), string(data), name)
	}
	embedded := []string{"values.schema.json"}
	require.NoError(t, fs.WalkDir(chartfiles.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			embedded = append(embedded, path)
		}
		return err
	}))
	for _, name := range embedded {
		require.Contains(t, files, "torchwrap/"+name, archive)
	}
}

// untar reads a .tgz into its files' contents, by name.
func untar(t *testing.T, archive string) map[string][]byte {
	t.Helper()
	f, err := os.Open(archive)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[hdr.Name] = data
	}
}
