package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

const helloworld = "../../examples/helloworld.settings.yaml"

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

func TestRenderReadsStandardInput(t *testing.T) {
	out, errOut, code := generator(t, strings.NewReader(readFile(t, helloworld)), "render", "-f", "-")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, render(t, "-f", helloworld), out)
}

func TestProblemsInStandardInputAreNamedStdin(t *testing.T) {
	_, errOut, code := generator(t, strings.NewReader("jobName: Bad\ncontainerImage: busybox\n"), "render", "-f", "-")
	require.Equal(t, cli.ExitInvalid, code)
	require.True(t, strings.HasPrefix(errOut, "<stdin>:1:10: jobName: "), errOut)
}

// Several -f merge left to right as in helm: maps key by key, lists and
// scalars replaced whole.
func TestSeveralFilesMergeLeftToRight(t *testing.T) {
	base := writeFile(t, "base.yaml", `jobName: base
containerImage: busybox
numPods: 2
setupCommands: [echo base]
mountNVMe:
  storage: 10Gi
`)
	overlay := writeFile(t, "overlay.yaml", `jobName: overlay
setupCommands: [echo overlay]
mountNVMe:
  mountPath: /scratch
`)
	merged := writeFile(t, "merged.yaml", `jobName: overlay
containerImage: busybox
numPods: 2
setupCommands: [echo overlay]
mountNVMe:
  storage: 10Gi
  mountPath: /scratch
`)
	require.Equal(t, render(t, "-f", merged), render(t, "-f", base, "-f", overlay))
}

// A problem belongs to the file whose value wins.
func TestProblemsPointAtTheFileThatSetTheValue(t *testing.T) {
	base := writeFile(t, "base.yaml", "jobName: my-job\ncontainerImage: busybox\nnumPods: 2\n")
	overlay := writeFile(t, "overlay.yaml", "# more pods\nnumPods: 0\n")
	_, errOut, code := generator(t, nil, "render", "-f", base, "-f", overlay)
	require.Equal(t, cli.ExitInvalid, code)
	require.Equal(t, overlay+":2:10: numPods: 0 is too small; use 1 or more\n1 problem in the settings; nothing was rendered\n", errOut)
}

func TestSetOverridesFilesWithHelmSyntax(t *testing.T) {
	withSet := render(t, "-f", helloworld, "--set", "numPods=8,jobName=from-set", "--set", "setupCommands={cd /tmp,ls}", "--set-string", "environmentVariables[0].name=COUNT", "--set-string", "environmentVariables[0].value=007")
	overlay := writeFile(t, "same.yaml", `numPods: 8
jobName: from-set
setupCommands: [cd /tmp, ls]
environmentVariables:
- name: COUNT
  value: "007"
`)
	require.Equal(t, render(t, "-f", helloworld, "-f", overlay), withSet)
	require.Contains(t, withSet, "replicas: 7")
}

func TestProblemsFromSetNameTheArgument(t *testing.T) {
	out, errOut, code := generator(t, nil, "render", "-f", helloworld, "--set", "numPods=0")
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out)
	require.Equal(t, "--set numPods=0: numPods: 0 is too small; use 1 or more\n1 problem in the settings; nothing was rendered\n", errOut)
}

func TestOutputFileIsWrittenAtomically(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "job.yaml")

	out, errOut, code := generator(t, nil, "render", "-f", helloworld, "-o", target)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Empty(t, out, "with -o nothing goes to standard output")
	require.Equal(t, render(t, "-f", helloworld), readFile(t, target))
	info, err := os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), info.Mode().Perm())

	// An existing file keeps its permissions.
	require.NoError(t, os.Chmod(target, 0o600))
	_, errOut, code = generator(t, nil, "render", "-f", helloworld, "--set", "numPods=2", "-o", target)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Contains(t, readFile(t, target), "replicas: 1")
	info, err = os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

// A file that holds the manifest already is left alone, time stamps and all,
// so that tools that watch them (make, rsync, CI caches) see no change; one of
// the same size that differs is replaced.
func TestOutputFileHoldingTheManifestIsLeftAlone(t *testing.T) {
	manifest := render(t, "-f", helloworld)
	target := writeFile(t, "job.yaml", manifest)
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, os.Chtimes(target, past, past))
	_, errOut, code := generator(t, nil, "render", "-f", helloworld, "-o", target)
	require.Equal(t, cli.ExitOK, code, errOut)
	info, err := os.Stat(target)
	require.NoError(t, err)
	require.True(t, info.ModTime().Equal(past), "modified at %v", info.ModTime())

	sameSize := strings.Replace(manifest, "AppWrapper", "AppWrappeR", 1)
	require.Len(t, sameSize, len(manifest))
	require.NoError(t, os.WriteFile(target, []byte(sameSize), 0o644))
	_, errOut, code = generator(t, nil, "render", "-f", helloworld, "-o", target)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, manifest, readFile(t, target))
}

func TestOutputFileIsUntouchedOnError(t *testing.T) {
	target := writeFile(t, "job.yaml", "precious\n")
	out, errOut, code := generator(t, nil, "render", "-f", helloworld, "--set", "numPods=0", "-o", target)
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "nothing was rendered")
	require.Equal(t, "precious\n", readFile(t, target))

	_, errOut, code = generator(t, nil, "render", "-f", helloworld, "-o", filepath.Join(t.TempDir(), "missing", "job.yaml"))
	require.Equal(t, cli.ExitInvalid, code)
	require.Contains(t, errOut, "cannot write")
}

func TestUsageErrorsExitWithTwo(t *testing.T) {
	for name, args := range map[string][]string{
		"no settings":      {"render"},
		"missing file":     {"render", "-f", "does-not-exist.yaml"},
		"unknown flag":     {"render", "-f", helloworld, "--nope"},
		"unknown command":  {"rendr"},
		"extra argument":   {"render", "-f", helloworld, "extra"},
		"malformed --set":  {"render", "-f", helloworld, "--set", "numPods"},
		"validate no file": {"validate"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := generator(t, nil, args...)
			require.Equal(t, cli.ExitUsage, code, errOut)
			require.Empty(t, out)
			require.True(t, strings.HasPrefix(errOut, "Error: "), errOut)
			require.NotContains(t, errOut, "goroutine", "no Go stack trace reaches a user")
		})
	}
}

func TestValidate(t *testing.T) {
	out, errOut, code := generator(t, nil, "validate", "-f", helloworld)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, "OK: PyTorchJob my-job with 4 pod(s)\n", out)

	out, errOut, code = generator(t, nil, "validate", "-f", helloworld, "--set", "jobName=Bad")
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "--set jobName=Bad: jobName: \"Bad\" is not a valid job name")
}

func TestSchemaPrintsTheSettingsSchema(t *testing.T) {
	out, errOut, code := generator(t, nil, "schema")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, string(schema.JSON), out)
	require.True(t, json.Valid([]byte(out)))
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
	for _, line := range strings.Split(readFile(t, "../../chart/Chart.yaml"), "\n") {
		if v, ok := strings.CutPrefix(line, "version: "); ok {
			return v
		}
	}
	t.Fatal("chart/Chart.yaml has no version")
	return ""
}

// The generator-version annotation carries the chart's version.
func TestGeneratorVersionAnnotation(t *testing.T) {
	objects := cases.Objects(t, []byte(render(t, "-f", helloworld)))
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

// Warnings go to standard error and leave the output as it is; --strict
// makes them errors.
func TestWarningsAndStrict(t *testing.T) {
	risky := "../../testdata/golden/warnings/settings.yaml"
	out, errOut, code := generator(t, nil, "render", "-f", risky)
	require.Equal(t, cli.ExitOK, code)
	require.Equal(t, readFile(t, "../../testdata/golden/warnings/expected.yaml"), out)
	require.Contains(t, errOut, ": warning: environmentVariables[0].value: HF_TOKEN looks like a credential")

	out, errOut, code = generator(t, nil, "render", "-f", risky, "--strict")
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out)
	require.Contains(t, errOut, ": warning: environmentVariables[0].value: HF_TOKEN looks like a credential")
	require.True(t, strings.HasSuffix(errOut, "\n4 warnings, and --strict makes them errors; nothing was rendered\n"), errOut)

	out, _, code = generator(t, nil, "validate", "-f", risky, "--strict")
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out)

	target := writeFile(t, "job.yaml", "precious\n")
	_, _, code = generator(t, nil, "render", "-f", risky, "--strict", "-o", target)
	require.Equal(t, cli.ExitInvalid, code)
	require.Equal(t, "precious\n", readFile(t, target))

	_, errOut, code = generator(t, nil, "render", "-f", helloworld, "--strict")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Empty(t, errOut)
}

// --output json writes the same object as JSON, as kubectl -o json would;
// batch mode writes .json files then.
func TestRenderOutputJSON(t *testing.T) {
	out, errOut, code := generator(t, nil, "render", "-f", helloworld, "--output", "json")
	require.Equal(t, cli.ExitOK, code, errOut)
	var fromJSON map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &fromJSON))
	objects := cases.Objects(t, []byte(render(t, "-f", helloworld)))
	require.Len(t, objects, 1)
	asJSON, err := json.Marshal(objects[0])
	require.NoError(t, err)
	require.JSONEq(t, string(asJSON), out)
	require.True(t, strings.HasPrefix(out, "{\n  \"apiVersion\": \"workload.codeflare.dev/v1beta2\",\n"), out)

	dir := t.TempDir()
	_, errOut, code = generator(t, nil, "render", "--output", "json", "--out-dir", dir, helloworld)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, out, readFile(t, filepath.Join(dir, "helloworld.settings.json")))
}

func TestRenderOutputUsageErrors(t *testing.T) {
	for args, message := range map[string]string{
		"--output xml": "--output xml is not an output format; use yaml or json",
		"-o json":      "-o names the output file, and json has no extension: for the format, use --output json; for a file, use -o job.json",
	} {
		out, errOut, code := generator(t, nil, append([]string{"render", "-f", helloworld}, strings.Fields(args)...)...)
		require.Equal(t, cli.ExitUsage, code, args)
		require.Empty(t, out)
		require.Contains(t, errOut, "Error: "+message+"\n")
	}
}

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
	require.Equal(t, "PyTorchJob\nPyTorchTrainingJob\nDeepSpeedJob\n:4\n", out)
	out, _, _ = generator(t, nil, "__complete", "render", "--output", "")
	require.Equal(t, "yaml\njson\n:4\n", out)
}
