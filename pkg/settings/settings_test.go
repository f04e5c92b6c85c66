package settings

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/torchwrap/generator/pkg/golden"
	"github.com/torchwrap/generator/schema"
)

func definitionPattern(t *testing.T, name string) *regexp.Regexp {
	t.Helper()
	s, err := ParseSchema(schema.JSON)
	require.NoError(t, err)
	def := s.Definitions[name]
	require.NotNil(t, def, name)
	return regexp.MustCompile(def.Pattern)
}

// combinations joins every part of each list with every part of the next.
func combinations(lists ...[]string) []string {
	out := []string{""}
	for _, list := range lists {
		var next []string
		for _, prefix := range out {
			for _, part := range list {
				next = append(next, prefix+part)
			}
		}
		out = next
	}
	return out
}

// The duration patterns accept exactly what time.ParseDuration accepts, without
// a sign (AppWrapper durations are not negative), and above zero for
// positiveDuration.
func TestDurationPatternsAgreeWithGo(t *testing.T) {
	duration := definitionPattern(t, "duration")
	positive := definitionPattern(t, "positiveDuration")
	numbers := []string{"", "0", "1", "10", "007", ".5", "5.", "1.5", "0.0", ".", "0.", ".0"}
	units := []string{"", "ns", "us", "µs", "μs", "ms", "s", "m", "h", "d", "w", "H", "sec"}
	inputs := combinations([]string{"", "-", "+"}, numbers, units, numbers, units)
	for _, s := range inputs {
		d, err := time.ParseDuration(s)
		unsigned := !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+")
		require.Equal(t, err == nil && unsigned, duration.MatchString(s), "duration %q", s)
		if err == nil && d == 0 && strings.ContainsAny(s, "123456789") {
			continue // .5ns is written above zero, and Go rounds it down to 0
		}
		require.Equal(t, err == nil && unsigned && d > 0, positive.MatchString(s), "positive duration %q", s)
	}
}

// The quantity pattern accepts exactly the quantities Kubernetes parses,
// without a sign.
func TestQuantityPatternAgreesWithKubernetes(t *testing.T) {
	memory := definitionPattern(t, "memory")
	numbers := []string{"0", "1", "100", "1.5", ".5", "5.", "1e3", "1E3", "1e-3", "1.5e2", "1e"}
	suffixes := []string{"", "m", "k", "K", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "mi", "gi", "B", "GB", "GiB", " Gi"}
	for _, s := range combinations([]string{"", "-", "+"}, numbers, suffixes) {
		_, err := resource.ParseQuantity(s)
		unsigned := !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+")
		require.Equal(t, err == nil && unsigned, memory.MatchString(s), "quantity %q", s)
	}
	// Kubernetes reads a bare suffix or exponent ("Gi", "e3") as zero; the
	// schema wants a number.
	for _, s := range append(suffixes, "e3") {
		require.False(t, memory.MatchString(s), "quantity %q", s)
	}
}

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
	files, err := filepath.Glob("../../testdata/golden/*/settings.yaml")
	require.NoError(t, err)
	cases := [][]string{{special}, {special, "../../testdata/golden/nvme/settings.yaml"}}
	for _, f := range files {
		cases = append(cases, []string{f})
	}
	sets := []string{"numPods=3", "a.b[1]=x", "list={1,2}"}
	setStrings := []string{"numGpusPerPod=8"}
	for _, files := range cases {
		in, err := Load(Options{Files: files, Sets: sets, SetStrings: setStrings})
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
	in, err := Load(Options{Files: []string{path}})
	require.NoError(t, err)
	problems := in.Locate([]Issue{
		{Path: Path{"sshGitCloneConfig", "secretName"}, Message: "a"},
		{Path: Path{"mountNVMe", "storage"}, Message: "b"},
		{Path: Path{"mountNVMe", "mountPath"}, Message: "c"},
		{Path: Path{"containerImage"}, Message: "d"},
		{Path: Path{"ssh"}, Message: "e", AtKey: true},
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

func TestPathRoundTrip(t *testing.T) {
	for _, s := range []string{"jobName", "environmentVariables[2].name", "a.b[0][1].c", "sshGitCloneConfig.secretName"} {
		require.Equal(t, s, ParsePath(s).String())
	}
	require.Equal(t, Path{"volumes", "3", "mountPath"}, ParsePath("volumes[3].mountPath"))
}

func TestClosest(t *testing.T) {
	keys := []string{"numPods", "numGpusPerPod", "numCpusPerPod", "jobName", "mainProgram"}
	require.Equal(t, "numGpusPerPod", closest("numGPUsPerPod", keys))
	require.Equal(t, "jobName", closest("jobname", keys))
	require.Equal(t, "mainProgram", closest("mainProgam", keys))
	require.Equal(t, "high-priority", closest("high", []string{"default-priority", "low-priority", "high-priority"}))
	require.Equal(t, "", closest("storage", keys))
}

func TestDurationFix(t *testing.T) {
	for in, want := range map[string]string{"7d": "168h", "1d12h": "36h", "2w": "336h", "1.5d": "36h", "1d30m": "24h30m", "0d": "0s", "7x": ""} {
		require.Equal(t, want, durationFix(in), in)
	}
}

func TestQuantityFix(t *testing.T) {
	for in, want := range map[string]string{"64GB": "64G", "64GiB": "64Gi", "800 gi": "800Gi", "512mb": "512M", "1kb": "1k", "lots": ""} {
		require.Equal(t, want, quantityFix(in), in)
	}
}

// values.yaml is generated from the schema, so that its defaults and
// documentation never disagree with it.
func TestValuesFileIsGeneratedFromTheSchema(t *testing.T) {
	s, err := ParseSchema(schema.JSON)
	require.NoError(t, err)
	golden.Check(t, "../../chart/values.yaml", ValuesFile(s))
}
