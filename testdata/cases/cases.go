// Package cases is the index of the project's test data, for the tests of the
// generator module and of the harness module (testdata/harness): it finds the
// repository, lists the golden, invalid and example cases, renders them, and
// compares output with the expected files, rewriting them under -update (make
// golden).
//
// It lives beside the data it lists and is imported only by tests. Every test
// package that compares with expected files imports it, so that
// go test ./... -update gives each of those test binaries the flag.
package cases

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
)

// Update is set by -update: tests rewrite their expected files instead of
// comparing with them.
var Update = flag.Bool("update", false, "rewrite golden and generated files instead of comparing with them")

// modulePath names the repository's root module.
const modulePath = "github.com/torchwrap/generator"

// root finds the repository: the nearest folder above the working directory
// whose go.mod declares the generator module (the harness module's does not).
var root = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if declares(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of " + modulePath + " above the working directory")
		}
		dir = parent
	}
})

// declares tells whether the go.mod file names the generator module.
func declares(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if bytes.Equal(bytes.TrimSpace(lines.Bytes()), []byte("module "+modulePath)) {
			return true
		}
	}
	return false
}

// Path joins parts to the repository's root folder.
func Path(t testing.TB, parts ...string) string {
	t.Helper()
	dir, err := root()
	require.NoError(t, err)
	return filepath.Join(append([]string{dir}, parts...)...)
}

// Case is one folder of testdata/golden, testdata/invalid or
// testdata/cluster: its name, and the folder, which holds settings.yaml and
// the expected files.
type Case struct {
	Name, Dir string
}

// Settings is the case's settings file.
func (c Case) Settings() string { return filepath.Join(c.Dir, "settings.yaml") }

// Golden lists testdata/golden: settings that render to expected.yaml (and
// warnings.txt, when they give warnings).
func Golden(t testing.TB) []Case { return list(t, "golden") }

// Invalid lists testdata/invalid: settings refused with expected.txt.
func Invalid(t testing.TB) []Case { return list(t, "invalid") }

// Cluster lists testdata/cluster: settings that generator check checks
// against the simulated cluster of make e2e-cluster, with the extra arguments
// in args (if any) and the outcome in expected.txt.
func Cluster(t testing.TB) []Case { return list(t, "cluster") }

// InvalidProfiles lists testdata/profile/invalid: a profile.yaml (refined by
// refines.yaml, when there is one) that generator profile validate refuses
// with expected.txt.
func InvalidProfiles(t testing.TB) []Case {
	t.Helper()
	var cases []Case
	for _, f := range glob(t, "testdata", "profile", "invalid", "*", "profile.yaml") {
		cases = append(cases, Case{Name: filepath.Base(filepath.Dir(f)), Dir: filepath.Dir(f)})
	}
	return cases
}

func list(t testing.TB, kind string) []Case {
	t.Helper()
	files := glob(t, "testdata", kind, "*", "settings.yaml")
	cases := make([]Case, len(files))
	for i, f := range files {
		cases[i] = Case{Name: filepath.Base(filepath.Dir(f)), Dir: filepath.Dir(f)}
	}
	return cases
}

// UnseenByHelm are the invalid cases that no Helm chart can see, since Helm's
// reading of a values file hides what is wrong with them, with the reason.
var UnseenByHelm = map[string]string{
	"duplicate-key": "Helm keeps the last of duplicate keys",
	"two-documents": "Helm 3 reads only the first document; Helm 4 merges them all, the last value winning",
}

// BuildGenerator builds the generator command of this work tree into the
// test's temporary folder, for the tests that run it as a program.
func BuildGenerator(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "generator")
	build := exec.Command("go", "build", "-o", bin, "./cmd/generator")
	build.Dir = Path(t)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// Run runs a program with stdin, which must succeed, and gives its
// standard output.
func Run(t testing.TB, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), errOut.String())
	return out
}

// Examples lists the files of examples/.
func Examples(t testing.TB) []string {
	t.Helper()
	return glob(t, "examples", "*.settings.yaml")
}

// Starters lists the starters of generator init, testdata/init: checked like
// the examples.
func Starters(t testing.TB) []string {
	t.Helper()
	return glob(t, "testdata", "init", "*.settings.yaml")
}

// Example is one file of examples/, by name: Example(t, "helloworld").
func Example(t testing.TB, name string) string {
	t.Helper()
	file := Path(t, "examples", name+".settings.yaml")
	_, err := os.Stat(file)
	require.NoError(t, err)
	return file
}

// glob lists the files matching the pattern under the root; none is an error.
func glob(t testing.TB, pattern ...string) []string {
	t.Helper()
	files, err := filepath.Glob(Path(t, pattern...))
	require.NoError(t, err)
	require.NotEmpty(t, files, filepath.Join(pattern...))
	return files
}

// Check compares got with the file at path, or writes got there under -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing expected file; run make golden and review the diff")
	require.Equal(t, string(want), string(got), "%s is out of date; run make golden and review the diff", path)
}

// Objects parses a YAML stream into its documents, skipping empty ones, so that
// two manifests can be compared as objects rather than as text.
func Objects(t testing.TB, stream []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(stream))
	var objects []map[string]any
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return objects
		}
		require.NoError(t, err, "not a valid YAML stream:\n%s", stream)
		if obj != nil {
			objects = append(objects, obj)
		}
	}
}

// ValidSettings lists the settings files that render: the golden cases, the
// examples and the starters.
func ValidSettings(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, c := range Golden(t) {
		files = append(files, c.Settings())
	}
	return append(append(files, Examples(t)...), Starters(t)...)
}

// AllSettings lists every settings file of the repository: the valid ones and
// the invalid cases.
func AllSettings(t testing.TB) []string {
	t.Helper()
	files := ValidSettings(t)
	for _, c := range Invalid(t) {
		files = append(files, c.Settings())
	}
	return files
}

// SeedCorpus adds every settings file of the repository to a fuzz corpus.
func SeedCorpus(f *testing.F) {
	for _, file := range AllSettings(f) {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
}

// Render renders a settings file with the generator, which must accept it,
// and returns what render writes: any ConfigMap (helmHook's), then the job.
func Render(t testing.TB, file string) []byte {
	t.Helper()
	in, err := settings.Load(settings.Options{Files: []string{file}})
	require.NoError(t, err, file)
	result, err := render.Render(in, nil, nil)
	require.NoError(t, err, file)
	return result.Stream()
}
