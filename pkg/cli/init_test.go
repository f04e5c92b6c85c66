package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

// init writes, for each kind, a starter that renders as is, without a single
// warning, and beside it the editor schema its modeline names; testdata/init
// holds them for review (and for the fidelity checks and make e2e, which treat
// them as examples). A TrainJob's is rendered bare: AppWrapper cannot wrap it.
func TestInitWritesAStarterThatRenders(t *testing.T) {
	none := withoutKubeconfig(t)
	for kind, object := range map[string]string{"PyTorchJob": "AppWrapper", "JobSet": "AppWrapper", "TrainJob": "TrainJob", "PyTorchTrainingJob": "AppWrapper", "DeepSpeedJob": "AppWrapper"} {
		t.Run(kind, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "settings.yaml")
			out, errOut, code := generator(t, nil, "init", "--kind", kind, file)
			require.Equal(t, cli.ExitOK, code, errOut)
			require.Empty(t, out)
			require.Equal(t, none+"wrote "+file+", a "+kind+", and beside it generator-0.1.0.schema.json, the schema its first line names for editors; render it with: generator render -f "+file+"\n", errOut)
			starter := readFile(t, file)
			require.True(t, strings.HasPrefix(starter, "# yaml-language-server: $schema=generator-0.1.0.schema.json\n"), starter)
			require.Equal(t, string(schema.EditorJSON), readFile(t, filepath.Join(filepath.Dir(file), "generator-0.1.0.schema.json")))
			require.Contains(t, starter, "\njobKind: "+kind+"\n")

			manifest := render(t, "-f", file, "--strict")
			require.Contains(t, manifest, "\nkind: "+object+"\n")

			stdout, errOut, code := generator(t, nil, "init", "--kind", kind, "-")
			require.Equal(t, cli.ExitOK, code, errOut)
			require.Equal(t, none+"its modeline names generator-0.1.0.schema.json: write it beside the file with generator schema > generator-0.1.0.schema.json\n", errOut)
			require.Equal(t, strings.ReplaceAll(starter, file, "settings.yaml"), stdout)
			cases.Check(t, cases.Path(t, "testdata", "init", kind+".settings.yaml"), []byte(stdout))
		})
	}
}

// With --schema online, the starters' modeline names the editor schema where
// a release publishes it: GitHub's raw file of the repository that go.mod
// names, at the tag of the chart's version, at the file's path in the
// repository; and the file there is what generator schema prints.
func TestInitModelineNamesThePublishedEditorSchema(t *testing.T) {
	repo, ok := strings.CutPrefix(modulePath(t), "github.com/")
	require.True(t, ok, "the module is not on GitHub")
	const file = "schema/editor.schema.json"
	want := "# yaml-language-server: $schema=https://raw.githubusercontent.com/" + repo + "/v" + chartVersion(t) + "/" + file
	none := withoutKubeconfig(t)
	require.Equal(t, string(schema.EditorJSON), readFile(t, cases.Path(t, filepath.FromSlash(file))))
	for _, kind := range []string{"PyTorchJob", "JobSet", "TrainJob", "PyTorchTrainingJob", "DeepSpeedJob"} {
		out, errOut, code := generator(t, nil, "init", "--kind", kind, "--schema", "online", "-")
		require.Equal(t, cli.ExitOK, code, errOut)
		require.Equal(t, none, errOut)
		modeline, _, _ := strings.Cut(out, "\n")
		require.Equal(t, want, modeline)
	}
}

// modulePath is the module path go.mod declares.
func modulePath(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, cases.Path(t, "go.mod")), "\n") {
		if path, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(path)
		}
	}
	t.Fatal("go.mod declares no module")
	return ""
}

// withoutKubeconfig leaves init no kubeconfig, whatever this machine has,
// and gives the line in which it says so.
func withoutKubeconfig(t *testing.T) string {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	return "profile: none read, the starter has the chart's defaults: no cluster to talk to: no kubeconfig was found (KUBECONFIG, ~/.kube/config); pass --kubeconfig FILE, or set KUBECONFIG\n"
}

func TestInitNeverOverwrites(t *testing.T) {
	none := withoutKubeconfig(t)
	file := writeFile(t, "settings.yaml", "precious\n")
	out, errOut, code := generator(t, nil, "init", file)
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out)
	require.Equal(t, none+"Error: "+file+" exists already, and init does not overwrite files; name another file, or remove it first\n", errOut)
	require.Equal(t, "precious\n", readFile(t, file))
}

// A second settings file in a folder shares the schema init wrote there; a
// different file of that name is left as it is, and so init writes nothing.
func TestInitKeepsTheSchemaBeside(t *testing.T) {
	none := withoutKubeconfig(t)
	dir := t.TempDir()
	_, errOut, code := generator(t, nil, "init", filepath.Join(dir, "a.yaml"))
	require.Equal(t, cli.ExitOK, code, errOut)
	_, errOut, code = generator(t, nil, "init", filepath.Join(dir, "b.yaml"))
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, string(schema.EditorJSON), readFile(t, filepath.Join(dir, "generator-0.1.0.schema.json")))

	dir = t.TempDir()
	own := filepath.Join(dir, "generator-0.1.0.schema.json")
	require.NoError(t, os.WriteFile(own, []byte("{}\n"), 0o666))
	out, errOut, code := generator(t, nil, "init", filepath.Join(dir, "settings.yaml"))
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out)
	require.Equal(t, none+"Error: "+own+" exists already and is not this version's schema, and init does not overwrite files; remove it, or name it with --schema generator-0.1.0.schema.json to keep it\n", errOut)
	require.Equal(t, "{}\n", readFile(t, own))
	require.NoFileExists(t, filepath.Join(dir, "settings.yaml"))

	_, errOut, code = generator(t, nil, "init", "--schema", "https://example.com/s.json", filepath.Join(dir, "c.yaml"))
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, "{}\n", readFile(t, own))
}

// Without FILE, init writes settings.yaml in the current folder.
func TestInitWritesSettingsYamlByDefault(t *testing.T) {
	t.Chdir(t.TempDir())
	_, errOut, code := generator(t, nil, "init")
	require.Equal(t, cli.ExitOK, code, errOut)
	_, err := os.Stat("settings.yaml")
	require.NoError(t, err)
}

func TestInitSchemaAndKindFlags(t *testing.T) {
	out, errOut, code := generator(t, nil, "init", "--schema", "settings.schema.json", "-")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.True(t, strings.HasPrefix(out, "# yaml-language-server: $schema=settings.schema.json\n"), out)

	out, errOut, code = generator(t, nil, "init", "--kind", "TFJob", "-")
	require.Equal(t, cli.ExitUsage, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "Error: --kind TFJob is not a job kind; use one of PyTorchJob, JobSet, TrainJob, PyTorchTrainingJob, DeepSpeedJob\n")
}

// init creates the folders of FILE when missing, and says why when it
// cannot write FILE, without the name of any file of its own.
func TestInitIntoAMissingFolder(t *testing.T) {
	none := withoutKubeconfig(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "jobs", "first", "settings.yaml")
	_, errOut, code := generator(t, nil, "init", file)
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Contains(t, readFile(t, file), "\njobKind: PyTorchJob\n")

	file = filepath.Join(file, "settings.yaml")
	out, errOut, code := generator(t, nil, "init", file)
	require.Equal(t, cli.ExitInvalid, code)
	require.Empty(t, out)
	require.Equal(t, none+"Error: cannot write "+file+": not a directory\n", errOut)
}
