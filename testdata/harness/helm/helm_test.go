package helm_test

// The chart as Helm's users run it: the helm command of Helm 4, built from the
// module in testdata/helm4, and helm package with Helm 3 and Helm 4.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/pinned"
)

// chartDir is the chart folder.
func chartDir(t *testing.T) string { return cases.Path(t, "chart") }

// generatorObjects are the objects the generator renders from a settings file.
func generatorObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
	return cases.Objects(t, cases.Render(t, file))
}

// helmCLI is a helm command, run as a process with an empty Helm home of its
// own and no kubeconfig.
type helmCLI struct {
	name, path string
	env        []string
}

func newHelmCLI(t *testing.T, name, path string) helmCLI {
	home := t.TempDir()
	env := append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "kubeconfig"))
	return helmCLI{name: name, path: path, env: env}
}

// run runs helm with args. err is set if helm exits with an error; stderr
// then holds helm's message.
func (h helmCLI) run(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(h.path, args...)
	cmd.Env = h.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// template is helm template chart -f file..., each file over the ones before
// it, which must succeed.
func (h helmCLI) template(t *testing.T, chart string, files ...string) []byte {
	t.Helper()
	args := []string{"template", chart}
	for _, file := range files {
		args = append(args, "-f", file)
	}
	out, errOut, err := h.run(args...)
	require.NoError(t, err, "%s: helm %s: %s", h.name, strings.Join(args, " "), errOut)
	return []byte(out)
}

// once holds the result of finding or building a helm command.
type once struct {
	sync.Once
	path string
	err  error
}

var helm3Once, helm4Once once

// helm3 is the helm command of the harness module's tool directive, the one
// make lint runs: go tool -n builds it, or finds it in Go's build cache, and
// names it.
func helm3(t *testing.T) helmCLI {
	t.Helper()
	helm3Once.Do(func() {
		cmd := exec.Command("go", "tool", "-n", "helm")
		cmd.Dir = ".."
		out, err := cmd.Output()
		if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
			err = errors.New(string(exitErr.Stderr))
		}
		helm3Once.path, helm3Once.err = strings.TrimSpace(string(out)), err
	})
	require.NoError(t, helm3Once.err, "go tool -n helm")
	return newHelmCLI(t, "Helm 3", helm3Once.path)
}

// helm4 is the helm command of Helm 4, built from the module in
// testdata/helm4 into the user's cache folder by the first test that needs
// it (a cold build takes minutes), or found there.
func helm4(t *testing.T) helmCLI {
	t.Helper()
	helm4Once.Do(func() { helm4Once.path, helm4Once.err = buildHelm4(cases.Path(t, "testdata"), t.Logf) })
	require.NoError(t, helm4Once.err, "building Helm 4 from testdata/helm4")
	return newHelmCLI(t, "Helm 4", helm4Once.path)
}

// buildHelm4 builds (or reuses) the helm command of pinned.Helm4 and checks
// that it is the Helm 4 that testdata/helm4 pins.
func buildHelm4(testdata string, logf func(string, ...any)) (string, error) {
	set, version, err := pinned.Helm4(testdata)
	if err != nil {
		return "", err
	}
	dir, err := set.Build(testdata, logf)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "helm")
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "", err
	}
	// go build names a package's module as the main one when the package
	// lies in a dependency of the wrapper module.
	for _, m := range append(info.Deps, &info.Main) {
		if m.Path == pinned.Helm4Module && m.Version == version {
			return path, nil
		}
	}
	return "", errors.New(path + " is not built from " + pinned.Helm4Module + " " + version)
}

// helm template with Helm 3 and with Helm 4 gives the same objects as the
// generator for every golden case, example and starter.
func TestHelmTemplateGivesTheSameObjects(t *testing.T) {
	for _, helm := range []helmCLI{helm3(t), helm4(t)} {
		t.Run(helm.name, func(t *testing.T) {
			for _, file := range cases.ValidSettings(t) {
				t.Run(file, func(t *testing.T) {
					t.Parallel()
					require.Equal(t, generatorObjects(t, file), cases.Objects(t, helm.template(t, chartDir(t), file)))
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
	for _, helm := range []helmCLI{helm3(t), helm4(t)} {
		t.Run(helm.name, func(t *testing.T) {
			for _, file := range append(cases.Examples(t), cases.Starters(t)...) {
				t.Run(file, func(t *testing.T) {
					t.Parallel()
					rendered := cases.Run(t, nil, generator, "render", "-f", file, "--profile", clusterProfile)
					require.Equal(t, cases.Objects(t, rendered), cases.Objects(t, helm.template(t, chartDir(t), values, file)))
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
	helm3, helm4 := helm3(t), helm4(t)
	for _, c := range cases.Invalid(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := helm4.run("template", chartDir(t), "-f", c.Settings())
			if reason, ok := cases.UnseenByHelm[c.Name]; ok {
				require.NoError(t, err, "expected Helm 4 not to see it (%s): %s", reason, errOut)
				require.NotEmpty(t, cases.Objects(t, []byte(out)))
				return
			}
			require.Error(t, err, "Helm 4 renders it:\n%s", out)
			_, errOut3, err3 := helm3.run("template", chartDir(t), "-f", c.Settings())
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
	require.Equal(t, "my-job", name(cases.Objects(t, helm3(t).template(t, chartDir(t), file))), "Helm 3")
	require.Equal(t, "other", name(cases.Objects(t, helm4(t).template(t, chartDir(t), file))), "Helm 4")
}

// helm lint --strict with Helm 4 finds nothing of warning severity or worse,
// as make lint checks with Helm 3.
func TestHelm4LintStrict(t *testing.T) {
	out, errOut, err := helm4(t).run("lint", "--strict", chartDir(t), "-f", cases.Example(t, "helloworld"))
	require.NoError(t, err, "%s%s", out, errOut)
	require.NotRegexp(t, `\[(WARNING|ERROR)\]`, out+errOut)
	require.Contains(t, out, "1 chart(s) linted, 0 chart(s) failed")
}

// helm package, with Helm 3 and with Helm 4, gives a chart archive that holds
// the chart's files unchanged and no Go file, and that renders every golden
// case and example to the same objects as the generator.
func TestHelmPackageRendersTheSameObjects(t *testing.T) {
	for _, helm := range []func(*testing.T) helmCLI{helm3, helm4} {
		helm := helm(t)
		t.Run(helm.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, errOut, err := helm.run("package", chartDir(t), "-d", dir)
			require.NoError(t, err, "%s%s", out, errOut)
			archives, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
			require.NoError(t, err)
			require.Len(t, archives, 1, out)
			checkPackage(t, archives[0])
			for _, file := range cases.ValidSettings(t) {
				t.Run(file, func(t *testing.T) {
					t.Parallel()
					require.Equal(t, generatorObjects(t, file), cases.Objects(t, helm.template(t, archives[0], file)))
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
