package cli_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/testdata/cases"
)

// generator runs the command line in-process.
func generator(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.Run(args, cli.Streams{In: stdin, Out: &out, Err: &errOut})
	return out.String(), errOut.String(), code
}

// Each golden case renders to its expected.yaml, byte for byte, with the
// warnings of its warnings.txt (none when there is no such file).
func TestGolden(t *testing.T) {
	for _, c := range cases.Golden(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Chdir(c.Dir) // messages name the file as given: settings.yaml
			out, errOut, code := generator(t, nil, "render", "-f", "settings.yaml")
			require.Equal(t, cli.ExitOK, code, errOut)
			cases.Check(t, "expected.yaml", []byte(out))
			if _, err := os.Stat("warnings.txt"); err == nil || errOut != "" {
				cases.Check(t, "warnings.txt", []byte(errOut))
			}
		})
	}
}

// Each invalid case is refused with exit code 1, nothing on standard output,
// and exactly the messages of its expected.txt.
func TestInvalid(t *testing.T) {
	for _, c := range cases.Invalid(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Chdir(c.Dir) // messages name the file as given: settings.yaml
			out, errOut, code := generator(t, nil, "render", "-f", "settings.yaml")
			require.Equal(t, cli.ExitInvalid, code, errOut)
			require.Empty(t, out)
			cases.Check(t, "expected.txt", []byte(errOut))
		})
	}
}

// The invalid cases that the MLBatch chart (1.1.12) rendered are refusals of
// settings files written for it: each has an mlbatch.txt that says what the
// MLBatch chart did with it, and the page for that chart's users
// (docs/mlbatch.md) links it (and no other case), so that the page lists
// every such refusal.
func TestMLBatchRefusalsAreInTheirPage(t *testing.T) {
	page := readFile(t, cases.Path(t, "docs", "mlbatch.md"))
	linked := map[string]bool{}
	for _, m := range caseLink.FindAllStringSubmatch(page, -1) {
		linked[m[1]] = true
	}
	require.NotEmpty(t, linked, "docs/mlbatch.md links no invalid case")
	for _, c := range cases.Invalid(t) {
		record, err := os.ReadFile(filepath.Join(c.Dir, "mlbatch.txt"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if linked[c.Name] {
				t.Errorf("docs/mlbatch.md links %s as a file the MLBatch chart rendered, but it has no mlbatch.txt", c.Name)
			}
		case err != nil:
			t.Error(err)
		case strings.TrimSpace(string(record)) == "":
			t.Errorf("%s/mlbatch.txt is empty: say what the MLBatch chart did with the file", c.Name)
		case !linked[c.Name]:
			t.Errorf("the MLBatch chart rendered testdata/invalid/%s (mlbatch.txt), which is refused: link it in docs/mlbatch.md, in the bullet of its reason", c.Name)
		}
		delete(linked, c.Name)
	}
	for name := range linked {
		t.Errorf("docs/mlbatch.md links testdata/invalid/%s, which is no invalid case", name)
	}
}

// docs/cluster.md's "Before you submit" quotes what generator check printed
// in the simulated cluster: the expected files of those scenarios (check's,
// and guards'), which make e2e-cluster keeps true.
func TestTheDocsQuoteCheckAsItRuns(t *testing.T) {
	page := readFile(t, cases.Path(t, "docs", "cluster.md"))
	for _, scenario := range []string{"cluster/readme", "cluster/researcher", "guards/restricted", "guards/quota", "guards/quota-mlbatch"} {
		transcript := readFile(t, cases.Path(t, "testdata", scenario, "expected.txt"))
		_, output, _ := strings.Cut(transcript, "\n") // after "exit N"
		require.Contains(t, page, "```text\n"+output+"```", "docs/cluster.md quotes testdata/%s/expected.txt as it is", scenario)
	}
}

// caseLink is a Markdown link to an invalid case's folder.
var caseLink = regexp.MustCompile(`\]\(\.\./testdata/invalid/([^/)]+)/?\)`)

// Every example and starter renders, and validate agrees with render about it.
func TestExamples(t *testing.T) {
	for _, file := range append(cases.Examples(t), cases.Starters(t)...) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			out, errOut, code := generator(t, nil, "render", "-f", file)
			require.Equal(t, cli.ExitOK, code, errOut)
			docs := strings.Split(strings.TrimPrefix(out, "---\n"), "\n---\n")
			require.Len(t, docs, 1)
			var object, values map[string]any
			require.NoError(t, sigsyaml.UnmarshalStrict([]byte(docs[0]), &object))
			require.NoError(t, sigsyaml.Unmarshal([]byte(readFile(t, file)), &values))
			// An AppWrapper, or with wrapper: none (a TrainJob's default)
			// the job alone.
			wrapper, set := values["wrapper"]
			if !set && values["jobKind"] == "TrainJob" {
				wrapper = "none"
			}
			kind := "AppWrapper"
			if wrapper == "none" {
				kind = "PyTorchJob"
				if k, ok := values["jobKind"].(string); ok {
					kind = k
				}
			}
			require.Equal(t, kind, object["kind"])

			out, errOut, code = generator(t, nil, "validate", "-f", file)
			require.Equal(t, cli.ExitOK, code, errOut)
			require.Regexp(t, `^OK: (PyTorchJob|JobSet|TrainJob|PyTorchTrainingJob|DeepSpeedJob) [a-z0-9-]+ with [0-9]+ pod\(s\)\n$`, out)
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}
