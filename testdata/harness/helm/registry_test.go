package helm_test

// The chart from a real OCI registry (package registry: CNCF distribution, TLS
// under a test authority, basic authentication), with Helm 3 and Helm 4: as a
// user publishes and uses it (docs/helm.md), and as Argo CD's repo-server
// renders it for an Application whose values file comes from a second source.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/helmcli"
	"github.com/torchwrap/generator/testdata/harness/registry"
)

// chartPackage is the chart as make dist packages it: helm package of the
// chart folder with the harness module's helm (Helm 3), made once.
func chartPackage(t *testing.T) (archive, version string) {
	t.Helper()
	packaged.Do(func() {
		dir, err := os.MkdirTemp("", "torchwrap-chart-")
		if err != nil {
			packaged.err = err
			return
		}
		out, errOut, err := helmcli.Helm3(t).Run("package", chartDir(t), "-d", dir)
		if err != nil {
			packaged.err = fmt.Errorf("helm package: %v: %s%s", err, out, errOut)
			return
		}
		packaged.archive = filepath.Join(dir, "torchwrap-"+chartMetadata(t)["version"].(string)+".tgz")
	})
	require.NoError(t, packaged.err)
	require.FileExists(t, packaged.archive)
	return packaged.archive, chartMetadata(t)["version"].(string)
}

var packaged struct {
	sync.Once
	archive string
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if packaged.archive != "" {
		os.RemoveAll(filepath.Dir(packaged.archive))
	}
	os.Exit(code)
}

// chartMetadata is chart/Chart.yaml.
func chartMetadata(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	require.NoError(t, err)
	var metadata map[string]any
	require.NoError(t, yaml.Unmarshal(data, &metadata))
	return metadata
}

// publish logs helm in to the registry r and pushes the chart package to
// oci://HOST/REPO, as docs/helm.md tells a user to; it returns the chart's
// reference, oci://HOST/REPO/torchwrap.
func publish(t *testing.T, helm helmcli.CLI, r *registry.Registry, repo string) (ref, version string) {
	t.Helper()
	archive, version := chartPackage(t)
	out, errOut, err := helm.Exec("", r.Password+"\n", "registry", "login", r.Host, "-u", r.User, "--password-stdin", "--ca-file", r.CAFile)
	require.NoError(t, err, "%s: helm registry login: %s%s", helm.Name, out, errOut)
	require.Contains(t, out+errOut, "Login Succeeded")
	out, errOut, err = helm.Run("push", archive, "oci://"+r.Host+"/"+repo, "--ca-file", r.CAFile)
	require.NoError(t, err, "%s: helm push: %s%s", helm.Name, out, errOut)
	ref = "oci://" + r.Host + "/" + repo + "/torchwrap"
	require.Contains(t, out+errOut, "Pushed: "+strings.TrimPrefix(ref, "oci://")+":"+version)
	return ref, version
}

// With Helm 3 and Helm 4, each with a registry of its own: a wrong password
// is refused by helm registry login, and so is a pull before any login
// (the registry answers 401); logged in, helm push of the package that make
// dist writes, and helm template oci://... of it gives the same objects as
// generator render for every example and starter; helm show chart, values
// and readme of the pushed chart say what chart/Chart.yaml, values.yaml and
// README.md say.
func TestChartFromAnOCIRegistry(t *testing.T) {
	testdata := cases.Path(t, "testdata")
	for _, helm := range helmcli.Both(t) {
		t.Run(helm.Name, func(t *testing.T) {
			r := registry.Start(t, testdata)
			_, version := chartPackage(t)

			_, errOut, err := helm.Exec("", "not-"+r.Password+"\n", "registry", "login", r.Host, "-u", r.User, "--password-stdin", "--ca-file", r.CAFile)
			require.Error(t, err, "helm registry login with a wrong password")
			require.Contains(t, errOut, "401: unauthorized: authentication required", "what helm says of a wrong password")

			anonymous := helmcli.New(t, helm.Name, helm.Path)
			ref := "oci://" + r.Host + "/charts/torchwrap"
			_, errOut, err = anonymous.Run("pull", ref, "--version", version, "--ca-file", r.CAFile, "-d", t.TempDir())
			require.Error(t, err, "helm pull without login")
			require.Contains(t, errOut, "basic credential not found", "what helm says of a pull without login")
			status, err := r.Get("/v2/charts/torchwrap/manifests/" + version)
			require.NoError(t, err)
			require.Equal(t, http.StatusUnauthorized, status, "the registry's answer to a pull without credentials")

			pushed, _ := publish(t, helm, r, "charts")
			require.Equal(t, ref, pushed)

			// Without login, now that the chart is there: still refused.
			_, errOut, err = anonymous.Run("template", ref, "--version", version, "--ca-file", r.CAFile, "-f", cases.Example(t, "helloworld"))
			require.Error(t, err, "helm template oci://... without login")
			require.Contains(t, errOut, "basic credential not found")

			show := func(what string) string {
				return helm.Must(t, "show", what, ref, "--version", version, "--ca-file", r.CAFile)
			}
			var shown map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(show("chart")), &shown))
			require.Equal(t, chartMetadata(t), shown, "helm show chart")
			// helm show values and readme print the file, then a line end.
			for what, file := range map[string]string{"values": "values.yaml", "readme": "README.md"} {
				want, err := os.ReadFile(filepath.Join(chartDir(t), file))
				require.NoError(t, err)
				require.Equal(t, string(want)+"\n", show(what), "helm show %s", what)
			}

			for _, file := range append(cases.Examples(t), cases.Starters(t)...) {
				t.Run(file, func(t *testing.T) {
					t.Parallel()
					out := helm.Must(t, "template", ref, "--version", version, "--ca-file", r.CAFile, "-f", file)
					require.Equal(t, generatorObjects(t, file), cases.Objects(t, []byte(out)))
				})
			}
		})
	}
}
