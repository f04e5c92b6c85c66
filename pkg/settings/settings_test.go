package settings_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/testdata/cases"
)

// Load reads values exactly as helm does (YAML 1.1 booleans, numbers as
// float64, -f merging, --set syntax), so that the generator and helm template
// see the same settings.
func TestLoadReadsValuesAsHelmDoes(t *testing.T) {
	dir := t.TempDir()
	special := filepath.Join(dir, "special.yaml")
	require.NoError(t, os.WriteFile(special, []byte(`jobName: my-job
containerImage: busybox
disableSharedMemory: yes
numPods: 0x10
mainProgram: 1e3
environmentVariables:
- {name: A, value: on}
- {name: B, value: 1.50}
- {name: C, value: ~}
defaults: &d {storage: 1Gi}
mountNVMe:
  <<: *d
`), 0o644))
	inputs := [][]string{{special}, {special, cases.Path(t, "testdata", "golden", "nvme", "settings.yaml")}}
	for _, c := range cases.Golden(t) {
		inputs = append(inputs, []string{c.Settings()})
	}
	sets := []string{"numPods=3", "a.b[1]=x", "list={1,2}"}
	setStrings := []string{"numGpusPerPod=8"}
	for _, files := range inputs {
		in, err := settings.Load(settings.Options{Files: files, Sets: sets, SetStrings: setStrings})
		require.NoError(t, err, files)
		helm, err := (&values.Options{ValueFiles: files, Values: sets, StringValues: setStrings}).MergeValues(getter.Providers{})
		require.NoError(t, err, files)
		require.Equal(t, helm, in.Values, files)
	}
}

func TestLocateFollowsAliasesAndMergeKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`jobName: my-job
ssh: &ssh
  secretName: key
  configMapName: hosts
sshGitCloneConfig: *ssh
nvme: &nvme
  storage: 10 Gi
mountNVMe:
  <<: *nvme
  mountPath: /scratch
`), 0o644))
	in, err := settings.Load(settings.Options{Files: []string{path}})
	require.NoError(t, err)
	problems := in.Locate([]diag.Diagnostic{
		{Path: diag.Path{"sshGitCloneConfig", "secretName"}, Message: "a"},
		{Path: diag.Path{"mountNVMe", "storage"}, Message: "b"},
		{Path: diag.Path{"mountNVMe", "mountPath"}, Message: "c"},
		{Path: diag.Path{"containerImage"}, Message: "d"},
		{Path: diag.Path{"ssh"}, Message: "e", AtKey: true},
	})
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	require.Equal(t, []string{
		path + ":1:1: containerImage: d",
		path + ":2:1: ssh: e",
		path + ":3:15: sshGitCloneConfig.secretName: a",
		path + ":7:12: mountNVMe.storage: b",
		path + ":10:14: mountNVMe.mountPath: c",
	}, got)
}

// A value that --set read as a number or boolean, where the key takes text,
// gets the fix: --set-string, with the key as --set writes it and the value
// as the argument wrote it.
func TestLocateSuggestsSetStringForText(t *testing.T) {
	in, err := settings.Load(settings.Options{
		Sets:       []string{`podLabels.app\.kubernetes\.io/version=2,numPods=0`, "setupCommands={ls,true}"},
		SetStrings: []string{"jobName=12"},
	})
	require.NoError(t, err)
	text := []string{"string"}
	problems := in.Locate([]diag.Diagnostic{
		{Path: diag.Path{"podLabels", "app.kubernetes.io/version"}, Message: "a", Expected: text},
		{Path: diag.Path{"numPods"}, Message: "b"},
		{Path: diag.Path{"setupCommands", "1"}, Message: "c", Expected: text},
		{Path: diag.Path{"jobName"}, Message: "d", Expected: []string{"integer"}},
	})
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	require.Equal(t, []string{
		`--set podLabels.app\.kubernetes\.io/version=2,numPods=0: numPods: b`,
		`--set podLabels.app\.kubernetes\.io/version=2,numPods=0: podLabels["app.kubernetes.io/version"]: a; --set reads 2 as a number: for text, use --set-string podLabels.app\.kubernetes\.io/version=2`,
		`--set setupCommands={ls,true}: setupCommands[1]: c; --set reads true as a boolean: for text, use --set-string setupCommands[1]=true`,
		`--set-string jobName=12: jobName: d`,
	}, got)
}
