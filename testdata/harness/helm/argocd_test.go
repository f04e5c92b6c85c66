package helm_test

// Argo CD's repo-server renders a Helm chart from an OCI registry by running
// the helm command; these are its command lines, as Argo CD v3.5.1 writes
// them (github.com/argoproj/argo-cd, tag v3.5.1, commit 109ca7ca71):
//
//   - util/helm/client.go:183 ExtractChart, for a chart not in its cache:
//     line 228, RegistryLogin (util/helm/cmd.go:93)
//     helm registry login HOST --username U --password-stdin [--ca-file CA],
//     the password on standard input; line 240, PullOCI (cmd.go:309)
//     helm pull oci://REPO/CHART --version V --destination TMP [--ca-file CA];
//     the archive moved into its chart cache, then untarred by Argo CD's own
//     code (line 270, untarChart) into a new folder, the chart in
//     FOLDER/CHART (line 275); helm registry logout HOST (line 235, at the
//     function's end).
//   - reposerver/repository/repository.go:1259 helmTemplate: the release
//     name is the Application's name, the namespace its destination's, the
//     Kubernetes version and API versions the cluster's (line 1271); a value
//     file $ref/path is resolved in the checkout of the source named ref
//     (getResolvedRefValueFile, line 1550), to an absolute path;
//     util/helm/helm.go:72 Template runs, in the chart's folder,
//     helm template . --name-template APP --namespace NS --kube-version KV
//     --values FILE --api-versions GV... --include-crds (cmd.go:429-463).
//
// Every helm command runs with XDG_CACHE_HOME, XDG_CONFIG_HOME, XDG_DATA_HOME
// and HELM_CONFIG_HOME below a new temporary folder of each Cmd (cmd.go:70),
// one for ExtractChart and another for the template.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/helmcli"
	"github.com/torchwrap/generator/testdata/harness/pinned"
	"github.com/torchwrap/generator/testdata/harness/registry"
)

// The Application of docs/helm.md: llama-finetune, destination namespace
// team-a, the chart from the registry, the settings from a Git source with
// ref jobs, at $jobs/llama/settings.yaml.
const (
	argoApp       = "llama-finetune"
	argoNamespace = "team-a"
)

// What Argo CD's application controller sends as the cluster's API versions:
// group/version and group/version/Kind of each resource (a few of them).
var argoAPIVersions = []string{
	"v1", "v1/ConfigMap", "v1/Service",
	"apps/v1", "apps/v1/Deployment",
	"workload.codeflare.dev/v1beta2", "workload.codeflare.dev/v1beta2/AppWrapper",
	"kubeflow.org/v1", "kubeflow.org/v1/PyTorchJob",
	"jobset.x-k8s.io/v1alpha2", "jobset.x-k8s.io/v1alpha2/JobSet",
	"trainer.kubeflow.org/v1alpha1", "trainer.kubeflow.org/v1alpha1/TrainJob",
}

// argoHelm is the helm command as an Argo CD helm.Cmd runs it: the
// repo-server's environment, with Helm's folders below a home of its own.
func argoHelm(t *testing.T, helm helmcli.CLI) helmcli.CLI {
	home := t.TempDir()
	return helmcli.NewEnv(helm.Name, helm.Path,
		"XDG_CACHE_HOME="+home+"/cache",
		"XDG_CONFIG_HOME="+home+"/config",
		"XDG_DATA_HOME="+home+"/data",
		"HELM_CONFIG_HOME="+home+"/config")
}

// Argo CD's command lines, with Helm 3 and with Helm 4 each against a
// registry of its own, render every example to the same objects as
// generator render: the chart pulled from the registry once (login, pull,
// logout), then for each example untarred into a new folder and rendered
// there with the settings file as the second source's checkout holds it.
func TestArgoCDRendersTheChartFromTheRegistry(t *testing.T) {
	testdata := cases.Path(t, "testdata")
	for _, helm := range helmcli.Both(t) {
		t.Run(helm.Name, func(t *testing.T) {
			r := registry.Start(t, testdata)
			ref, version := publish(t, helm, r, "charts")
			require.Equal(t, "oci://"+r.Host+"/charts/torchwrap", ref)

			// ExtractChart: the repository URL of the Application is
			// HOST/charts (docs/helm.md), the chart torchwrap.
			extract := argoHelm(t, helm)
			run(t, extract, "", r.Password, "registry", "login", r.Host, "--username", r.User, "--password-stdin", "--ca-file", r.CAFile)
			dest := t.TempDir()
			run(t, extract, "", "", "pull", "oci://"+r.Host+"/charts/torchwrap", "--version", version, "--destination", dest, "--ca-file", r.CAFile)
			pulled, err := os.ReadDir(dest)
			require.NoError(t, err)
			require.Len(t, pulled, 1, "helm pull --destination leaves one file")
			cached := filepath.Join(t.TempDir(), "torchwrap-"+version+".tgz")
			require.NoError(t, os.Rename(filepath.Join(dest, pulled[0].Name()), cached))
			run(t, extract, "", "", "registry", "logout", r.Host)

			for _, file := range cases.Examples(t) {
				t.Run(file, func(t *testing.T) {
					t.Parallel()
					folder := t.TempDir()
					for name, data := range untar(t, cached) {
						path := filepath.Join(folder, filepath.FromSlash(name))
						require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
						require.NoError(t, os.WriteFile(path, data, 0o644))
					}
					chartPath := filepath.Join(folder, "torchwrap")
					// The second source's checkout, with the settings file
					// at llama/settings.yaml.
					settings := filepath.Join(t.TempDir(), "llama", "settings.yaml")
					require.NoError(t, os.MkdirAll(filepath.Dir(settings), 0o755))
					data, err := os.ReadFile(file)
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(settings, data, 0o644))

					args := []string{"template", ".", "--name-template", argoApp, "--namespace", argoNamespace,
						"--kube-version", pinned.KubeVersion, "--values", settings}
					for _, v := range argoAPIVersions {
						args = append(args, "--api-versions", v)
					}
					args = append(args, "--include-crds")
					out := run(t, argoHelm(t, helm), chartPath, "", args...)
					require.Equal(t, generatorObjects(t, file), cases.Objects(t, []byte(out)))
				})
			}
		})
	}
}

// run runs helm with args in the folder dir, stdin on its standard input,
// which must succeed, and returns its standard output.
func run(t *testing.T, h helmcli.CLI, dir, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := h.Exec(dir, stdin, args...)
	require.NoError(t, err, "%s: helm %q: %s%s", h.Name, args, out, errOut)
	return out
}
