//go:build e2e && linux

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/e2e"
	"github.com/torchwrap/generator/testdata/harness/helmcli"
	"github.com/torchwrap/generator/testdata/harness/registry"
)

const gitopsNamespace = "sim-gitops"

// gitops is the chart as GitOps tools drive it, with Helm 3 and with Helm 4:
// pushed to a registry with basic authentication, installed from it onto the
// cluster, where the job runs for real on the process nodes, upgraded and
// uninstalled; then with helmHook, the traps of a job under GitOps (a
// changed job replaces a finished one, or a running one; a finished job
// deleted is not created again by an upgrade that changes nothing); and the
// labels Argo CD and Flux add to track what they apply, accepted by every
// webhook.
func (s *sim) gitops(t *testing.T) {
	testdata := cases.Path(t, "testdata")
	r := registry.Start(t, testdata)
	s.ensureQueue(t, gitopsNamespace, "default-queue")
	s.ensureQueue(t, gitopsNamespace, e2e.ProcessQueue)
	require.NoError(t, s.cluster.ProgramsClaim(gitopsNamespace))
	version := chartVersion(t)
	for i, helm := range helmcli.Both(t) {
		repository := fmt.Sprintf("oci://%s/helm%d", r.Host, i+3)
		chart := repository + "/torchwrap"
		t.Run(strings.ReplaceAll(helm.Name, " ", ""), func(t *testing.T) {
			login := []string{"--ca-file", r.CAFile}
			out, errOut, err := helm.Exec("", r.Password+"\n", "registry", "login", r.Host, "-u", r.User, "--password-stdin", "--ca-file", r.CAFile)
			require.NoError(t, err, "helm registry login: %s%s", out, errOut)
			dir := t.TempDir()
			helm.Must(t, "package", cases.Path(t, "chart"), "-d", dir)
			helm.Must(t, append([]string{"push", filepath.Join(dir, "torchwrap-"+version+".tgz"), repository}, login...)...)
			// helm install, upgrade, uninstall, as a GitOps controller runs
			// them: kubeconfig of the cluster, the chart from the registry.
			run := func(t *testing.T, args ...string) (string, error) {
				args = append(args, "-n", gitopsNamespace, "--kubeconfig", s.cluster.Kubeconfig)
				if args[0] != "uninstall" {
					args = append(args, login...)
				}
				out, errOut, err := helm.Run(args...)
				t.Logf("helm %s\n%s%s", strings.Join(args, " "), out, errOut)
				return out + errOut, err
			}
			must := func(t *testing.T, args ...string) string {
				t.Helper()
				out, err := run(t, args...)
				require.NoError(t, err, out)
				return out
			}
			short := fmt.Sprintf("h%d", i+3)

			t.Run("install-upgrade-uninstall", func(t *testing.T) {
				name := "gitops-" + short
				settings := cases.Path(t, "testdata", "sim", "allreduce.settings.yaml")
				must(t, "install", name, chart, "--version", version, "-f", settings, "--set", "jobName="+name)
				s.waitPhase(t, gitopsNamespace, name, "Succeeded", 4*time.Minute)
				// What Helm puts on what it installs, accepted by the
				// AppWrapper's and Kueue's webhooks.
				aw := s.get(t, gitopsNamespace, "appwrapper", name)
				metadata := aw["metadata"].(map[string]any)
				require.Equal(t, "Helm", metadata["labels"].(map[string]any)["app.kubernetes.io/managed-by"])
				require.Equal(t, name, metadata["annotations"].(map[string]any)["meta.helm.sh/release-name"])
				// Changed settings of a submitted job are refused: by the
				// AppWrapper's webhook for Helm 3, which patches; Helm 4
				// applies server-side, and Kueue owns the field.
				out, err := run(t, "upgrade", name, chart, "--version", version, "-f", settings, "--set", "jobName="+name, "--set", "numPods=1")
				require.Error(t, err)
				refusal := map[int]string{0: "attempt to change immutable field", 1: `conflict with "kueue"`}[i]
				require.Contains(t, out, refusal)
				must(t, "uninstall", name, "--wait")
				s.waitFor(t, gitopsNamespace, "nothing left of release "+name, 2*time.Minute, func() bool {
					left, _ := s.cluster.Kubectl(nil, "get", "appwrappers,pytorchjobs,pods,configmaps,secrets", "-n", gitopsNamespace, "-o", "name")
					return !strings.Contains(left, name)
				})
			})

			t.Run("helm-hook", func(t *testing.T) {
				name := "hook-" + short
				settings := filepath.Join(t.TempDir(), "settings.yaml")
				require.NoError(t, os.WriteFile(settings, []byte(fmt.Sprintf(`jobName: %s
namespace: %s
helmHook: true
containerImage: ghcr.io/example/train:1.0
numPods: 2
numGpusPerPod: 1
mainProgram: train.py
podAnnotations:
  sim.torchwrap.dev/run-for: 2s
`, name, gitopsNamespace)), 0o644))
				uid := func() string {
					out, err := s.cluster.Kubectl(nil, "get", "appwrapper", name, "-n", gitopsNamespace, "-o", "jsonpath={.metadata.uid}")
					if err != nil {
						return ""
					}
					return out
				}
				install := []string{chart, "--version", version, "-f", settings}
				if i == 1 {
					// Helm 4 waits for the old hook to be gone before it
					// creates the new one only when it waits (by default it
					// waits for hooks only, and not for their deletion):
					// without --wait, it applies the new job over the old
					// one, still there until AppWrapper's finalizer is done.
					install = append(install, "--wait")
				}
				must(t, append([]string{"install", name}, install...)...)
				s.waitPhase(t, gitopsNamespace, name, "Succeeded", 3*time.Minute)
				first := uid()

				// Changed settings: the finished job is deleted, and the new
				// one runs.
				must(t, append([]string{"upgrade", name}, append(install, "--set-string", `podAnnotations.sim\.torchwrap\.dev/run-for=1s`)...)...)
				second := uid()
				require.NotEmpty(t, second)
				require.NotEqual(t, first, second, "the upgrade with changed settings replaced the job")
				s.waitPhase(t, gitopsNamespace, name, "Succeeded", 3*time.Minute)

				// The finished job deleted (by hand, or by AppWrapper after
				// successTTLDuration): an upgrade that changes nothing does
				// not create it again.
				kubectl(t, s.cluster, nil, "delete", "appwrapper", name, "-n", gitopsNamespace, "--wait=true")
				must(t, append([]string{"upgrade", name}, append(install, "--set-string", `podAnnotations.sim\.torchwrap\.dev/run-for=1s`)...)...)
				require.Empty(t, uid(), "an upgrade of unchanged settings created the deleted job again")

				// A job still running when its settings change: deleted,
				// its pods with it, and the new one runs.
				must(t, append([]string{"upgrade", name}, append(install, "--set-string", `podAnnotations.sim\.torchwrap\.dev/run-for=10m`)...)...)
				s.waitPhase(t, gitopsNamespace, name, "Running", 2*time.Minute)
				running := uid()
				must(t, append([]string{"upgrade", name}, append(install, "--set-string", `podAnnotations.sim\.torchwrap\.dev/run-for=3s`)...)...)
				require.NotEqual(t, running, uid(), "the upgrade with changed settings replaced the running job")
				s.waitPhase(t, gitopsNamespace, name, "Succeeded", 3*time.Minute)

				// helm uninstall removes the ConfigMap; Helm leaves hooks.
				must(t, "uninstall", name, "--wait")
				_, err := s.cluster.Kubectl(nil, "get", "configmap", name+"-helm-hook", "-n", gitopsNamespace)
				require.Error(t, err, "the ConfigMap of helmHook after helm uninstall")
			})
		})
	}

	t.Run("tracking-labels", func(t *testing.T) {
		// What Argo CD (its default label, and its annotation) and Flux
		// (helm-controller's and kustomize-controller's labels) add to what
		// they apply, on every kind the simulated cluster admits.
		tracking := `{"metadata":{"labels":{"app.kubernetes.io/instance":"jobs","helm.toolkit.fluxcd.io/name":"jobs","helm.toolkit.fluxcd.io/namespace":"flux-system","kustomize.toolkit.fluxcd.io/name":"jobs","kustomize.toolkit.fluxcd.io/namespace":"flux-system"},"annotations":{"argocd.argoproj.io/tracking-id":"jobs:KIND:NS/NAME"}}}`
		for _, example := range []string{"helloworld", "jobset", "trainjob"} {
			t.Run(example, func(t *testing.T) {
				manifest := s.render(t, cases.Example(t, example), "--set", "namespace="+gitopsNamespace, "--set", "jobName=tracked-"+example)
				objects := cases.Objects(t, manifest)
				job := jsonObject(t, objects[len(objects)-1])
				kind, _ := job["kind"].(string)
				group := strings.Split(job["apiVersion"].(string), "/")[0]
				patch := strings.NewReplacer("KIND", group+"/"+kind, "NS", gitopsNamespace, "NAME", "tracked-"+example).Replace(tracking)
				out := kubectl(t, s.cluster, manifest, "patch", "--local", "-f", "-", "--type", "merge", "-p", patch, "-o", "yaml")
				kubectl(t, s.cluster, []byte(out), "create", "--dry-run=server", "-f", "-")
			})
		}
	})
}

// chartVersion is the version of chart/Chart.yaml, as helm package names
// its archive.
func chartVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(cases.Path(t, "chart", "Chart.yaml"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "version: "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("chart/Chart.yaml has no version")
	return ""
}
