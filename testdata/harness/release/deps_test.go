package release_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
)

// goList runs go list in a folder and returns its lines.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "go list %s", strings.Join(args, " "))
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The generator binary links nothing that only tests use: not this harness,
// its upstream projects, nor the generator's own test libraries.
func TestTestOnlyModulesStayOutOfTheBinary(t *testing.T) {
	deps := goList(t, cases.Path(t), "-deps", "./cmd/generator")
	require.Contains(t, deps, "helm.sh/helm/v3/pkg/engine", "the listing works")
	for _, dep := range deps {
		for _, testOnly := range []string{
			"github.com/torchwrap/generator/testdata",
			"github.com/project-codeflare/appwrapper",
			"github.com/kubeflow/training-operator",
			"k8s.io/apiextensions-apiserver/pkg/apiserver", // Helm uses only its API types
			"k8s.io/apiextensions-apiserver/pkg/registry",
			"sigs.k8s.io/controller-runtime",
			"sigs.k8s.io/jobset",
			"github.com/kubeflow/trainer",
			"github.com/stretchr/testify",
			"github.com/rogpeppe/go-internal",
			"golang.org/x/mod",
		} {
			require.False(t, strings.HasPrefix(dep, testOnly), "%s is linked into the generator", dep)
		}
	}
}

// The helm command of the harness (make lint, the Helm 3 tests, make dist, make
// bench) is the Helm the generator renders with.
func TestHelmIsTheGeneratorsHelm(t *testing.T) {
	version := func(dir string) []string { return goList(t, dir, "-m", "helm.sh/helm/v3") }
	require.Equal(t, version(cases.Path(t)), version(cases.Path(t, "testdata", "harness")))
}
