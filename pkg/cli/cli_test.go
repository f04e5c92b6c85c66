package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

// The command line as a user sees it (standard input, -f merging, --set,
// -o, --strict, --output json, --out-dir, validate and usage errors, with
// their messages and exit codes) is pinned by the scripts in
// cmd/generator/testdata/script, which run the generator out of process. The
// tests here check the rest: file permissions, a large batch, the schema and
// the version against their sources, panics, help and completion.

// writeFile writes a settings file into a fresh temporary folder.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func render(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := generator(t, nil, append([]string{"render"}, args...)...)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Empty(t, errOut)
	return out
}

func TestOutputFileIsWrittenAtomically(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "job.yaml")

	out, errOut, code := generator(t, nil, "render", "-f", cases.Example(t, "helloworld"), "-o", target)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Empty(t, out, "with -o nothing goes to standard output")
	require.Equal(t, render(t, "-f", cases.Example(t, "helloworld")), readFile(t, target))
	info, err := os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), info.Mode().Perm())

	// An existing file keeps its permissions.
	require.NoError(t, os.Chmod(target, 0o600))
	_, errOut, code = generator(t, nil, "render", "-f", cases.Example(t, "helloworld"), "--set", "numPods=2", "-o", target)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Contains(t, readFile(t, target), "replicas: 1")
	info, err = os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

// schema prints the schema of a settings file as written, for editors; with
// --values, the schema of the chart's values, the chart's values.schema.json.
func TestSchemaPrintsTheEditorSchemaOrTheValuesSchema(t *testing.T) {
	out, errOut, code := generator(t, nil, "schema")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, string(schema.EditorJSON), out)
	require.True(t, json.Valid([]byte(out)))

	out, errOut, code = generator(t, nil, "schema", "--values")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, string(schema.JSON), out)
	require.Equal(t, readFile(t, cases.Path(t, "chart", "values.schema.json")), out)
}

func TestVersionNamesTheChartAndTheBuild(t *testing.T) {
	out, errOut, code := generator(t, nil, "version")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Regexp(t, `^generator \S+\n(commit    .+\n)?go        go1\.\d+\S* \w+/\w+\nchart     torchwrap \S+, appVersion v1beta2\n$`, out)
	require.Contains(t, out, "go        "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n")
	require.Contains(t, out, "chart     torchwrap "+chartVersion(t)+", ")
}

// chartVersion reads the version of chart/Chart.yaml.
func chartVersion(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, cases.Path(t, "chart", "Chart.yaml")), "\n") {
		if v, ok := strings.CutPrefix(line, "version: "); ok {
			return v
		}
	}
	t.Fatal("chart/Chart.yaml has no version")
	return ""
}

// The generator-version annotation carries the chart's version.
func TestGeneratorVersionAnnotation(t *testing.T) {
	objects := cases.Objects(t, []byte(render(t, "-f", cases.Example(t, "helloworld"))))
	annotations := objects[0]["metadata"].(map[string]any)["annotations"].(map[string]any)
	require.Equal(t, chartVersion(t), annotations["torchwrap.dev/generator-version"])
}

// A panic inside a command is reported in one line, without a stack trace.
func TestPanicsAreReportedWithoutStackTrace(t *testing.T) {
	var out, errOut strings.Builder
	code := cli.Run([]string{"render", "-f", "-"}, cli.Streams{In: panickingReader{}, Out: &out, Err: &errOut})
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out.String())
	require.Equal(t, "Error: internal error: boom\nThis is a bug in the generator; please report it with the command and settings that caused it.\n", errOut.String())
}

type panickingReader struct{}

func (panickingReader) Read([]byte) (int, error) { panic("boom") }

// Every command, cobra's help and completion included, shows examples in its
// --help.
func TestEveryCommandHasExamples(t *testing.T) {
	var commands [][]string
	var walk func(path []string, out string)
	walk = func(path []string, help string) {
		commands = append(commands, path)
		_, list, found := strings.Cut(help, "Available Commands:\n")
		if !found {
			return
		}
		list, _, _ = strings.Cut(list, "\n\n")
		for _, line := range strings.Split(list, "\n") {
			name := strings.Fields(line)[0]
			sub := append(path[:len(path):len(path)], name)
			out, _, code := generator(t, nil, append(sub, "--help")...)
			require.Equal(t, cli.ExitOK, code, sub)
			walk(sub, out)
		}
	}
	root, _, code := generator(t, nil, "--help")
	require.Equal(t, cli.ExitOK, code)
	walk(nil, root)
	require.Greater(t, len(commands), 12, "init, render, validate, explain, schema, version, help, completion and its 4 shells")
	for _, path := range commands {
		out, _, _ := generator(t, nil, append(path, "--help")...)
		_, examples, found := strings.Cut(out, "\nExamples:\n")
		require.True(t, found, "%v --help has no examples", path)
		examples, _, _ = strings.Cut(examples, "\n\n")
		require.Contains(t, examples, "generator "+strings.Join(path, " "), path)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, errOut, code := generator(t, nil, "completion", shell)
		require.Equal(t, cli.ExitOK, code, errOut)
		require.Contains(t, out, "generator", shell)
	}
	// The completion engine offers the keys to explain, and the job kinds.
	out, _, code := generator(t, nil, "__complete", "explain", "numG")
	require.Equal(t, cli.ExitOK, code)
	require.Contains(t, out, "numGpusPerPod\t")
	out, _, _ = generator(t, nil, "__complete", "init", "--kind", "")
	require.Equal(t, "PyTorchJob\nJobSet\nTrainJob\nPyTorchTrainingJob\nDeepSpeedJob\n:4\n", out)
	out, _, _ = generator(t, nil, "__complete", "render", "--output", "")
	require.Equal(t, "yaml\njson\n:4\n", out)

	// --set and --set-string complete the keys, followed by = (or by . for
	// a map), and nothing after the =.
	for _, args := range [][]string{{"render", "--set"}, {"render", "--set-string"}, {"validate", "--set"}} {
		out, _, code = generator(t, nil, append(append([]string{"__complete"}, args...), "num")...)
		require.Equal(t, cli.ExitOK, code)
		require.Contains(t, out, "\nnumGpusPerPod=\t", args)
		require.Contains(t, out, "\nenvironmentVariables[0].name=\t", args)
		require.Contains(t, out, "\npodLabels.\t", args)
		require.NotContains(t, out, "\nenvironmentVariables=", args)
		require.True(t, strings.HasSuffix(out, "\n:6\n"), "no space after the key, no file names: %s", out)
	}
	out, _, _ = generator(t, nil, "__complete", "render", "--set", "numPods=")
	require.Equal(t, ":4\n", out)
}
