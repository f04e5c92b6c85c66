package settings

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distribution/reference"
	"github.com/stretchr/testify/require"
	"github.com/xeipuuv/gojsonschema"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

// definition compiles one definition of the settings schema on its own, to
// ask it about single values.
func definition(t *testing.T, name string) func(value any) bool {
	t.Helper()
	doc := map[string]any{}
	require.NoError(t, json.Unmarshal(schema.JSON, &doc))
	defs := doc["definitions"].(map[string]any)
	require.Contains(t, defs, name)
	compiled, err := gojsonschema.NewSchema(gojsonschema.NewGoLoader(map[string]any{
		"definitions": defs, "$ref": "#/definitions/" + name,
	}))
	require.NoError(t, err)
	return func(value any) bool {
		result, err := compiled.Validate(gojsonschema.NewGoLoader(value))
		require.NoError(t, err)
		return result.Valid()
	}
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
	duration := definition(t, "duration")
	positive := definition(t, "positiveDuration")
	numbers := []string{"", "0", "1", "10", "007", ".5", "5.", "1.5", "0.0", ".", "0.", ".0"}
	units := []string{"", "ns", "us", "µs", "μs", "ms", "s", "m", "h", "d", "w", "H", "sec"}
	inputs := combinations([]string{"", "-", "+"}, numbers, units, numbers, units)
	for _, s := range inputs {
		d, err := time.ParseDuration(s)
		unsigned := !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+")
		require.Equal(t, err == nil && unsigned, duration(s), "duration %q", s)
		if err == nil && d == 0 && strings.ContainsAny(s, "123456789") {
			continue // .5ns is written above zero, and Go rounds it down to 0
		}
		require.Equal(t, err == nil && unsigned && d > 0, positive(s), "positive duration %q", s)
	}
}

// The quantity pattern accepts exactly the quantities Kubernetes parses,
// without a sign.
func TestQuantityPatternAgreesWithKubernetes(t *testing.T) {
	memory := definition(t, "memory")
	numbers := []string{"0", "1", "100", "1.5", ".5", "5.", "1e3", "1E3", "1e-3", "1.5e2", "1e"}
	suffixes := []string{"", "m", "k", "K", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "mi", "gi", "B", "GB", "GiB", " Gi"}
	for _, s := range combinations([]string{"", "-", "+"}, numbers, suffixes) {
		_, err := resource.ParseQuantity(s)
		unsigned := !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+")
		require.Equal(t, err == nil && unsigned, memory(s), "quantity %q", s)
	}
	// Kubernetes reads a bare suffix or exponent ("Gi", "e3") as zero; the
	// schema wants a number.
	for _, s := range append(suffixes, "e3") {
		require.False(t, memory(s), "quantity %q", s)
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
	inputs := [][]string{{special}, {special, cases.Path(t, "testdata", "golden", "nvme", "settings.yaml")}}
	for _, c := range cases.Golden(t) {
		inputs = append(inputs, []string{c.Settings()})
	}
	sets := []string{"numPods=3", "a.b[1]=x", "list={1,2}"}
	setStrings := []string{"numGpusPerPod=8"}
	for _, files := range inputs {
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
	for _, s := range []string{"jobName", "environmentVariables[2].name", "a.b[0][1].c", "sshGitCloneConfig.secretName",
		`nodeSelector["nvidia.com/gpu.product"]`, `podLabels["a[b"].c`, `x["say \"hi\""][0]`} {
		require.Equal(t, s, ParsePath(s).String())
	}
	require.Equal(t, Path{"volumes", "3", "mountPath"}, ParsePath("volumes[3].mountPath"))
	require.Equal(t, Path{"podAnnotations", "k8s.v1.cni.cncf.io/networks"}, ParsePath(`podAnnotations["k8s.v1.cni.cncf.io/networks"]`))
	require.Equal(t, Path{"podLabels", "team"}, ParsePath("podLabels.team"))
}

func TestClosest(t *testing.T) {
	keys := []string{"numPods", "numGpusPerPod", "numCpusPerPod", "jobName", "mainProgram"}
	lower := lowerAll(keys)
	require.Equal(t, "numGpusPerPod", closest("numGPUsPerPod", keys, lower))
	require.Equal(t, "jobName", closest("jobname", keys, lower))
	require.Equal(t, "mainProgram", closest("mainProgam", keys, lower))
	priorities := []string{"default-priority", "low-priority", "high-priority"}
	require.Equal(t, "high-priority", closest("high", priorities, lowerAll(priorities)))
	require.Equal(t, "", closest("storage", keys, lower))
	require.Equal(t, "", closest("num", keys, lower), "several keys start with num")
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
	cases.Check(t, cases.Path(t, "chart", "values.yaml"), ValuesFile(s))
}

// The settings reference (docs/settings.md) and the chart's README are
// generated from the schema: a test fails when they are stale (make docs).
func TestReferenceIsGeneratedFromTheSchema(t *testing.T) {
	s, err := ParseSchema(schema.JSON)
	require.NoError(t, err)
	cases.Check(t, cases.Path(t, "docs", "settings.md"), Reference(s))
	cases.Check(t, cases.Path(t, "chart", "README.md"), ChartReadme(s))
}

// Every key, at every depth, is documented: a description and a type, and a
// place in a section.
func TestEveryKeyIsDocumented(t *testing.T) {
	s, err := ParseSchema(schema.JSON)
	require.NoError(t, err)
	keys := s.Keys()
	require.Greater(t, len(keys), len(s.Properties), "fields of objects and of list items are keys too")
	for _, k := range keys {
		require.NotEmpty(t, k.Description, k.Path)
		require.NotEmpty(t, k.Section, k.Path)
		require.NotContains(t, k.Type, "any value", k.Path)
		require.NotNil(t, s.At(ParsePath(strings.ReplaceAll(k.Path, "[]", "[0]"))), k.Path)
	}
}

// Every duration the schema accepts is one time.ParseDuration reads without
// overflow: numbers of at most 6 digits in at most 20 characters cannot add up
// to the 2562047h a time.Duration holds.
func TestAcceptedDurationsNeverOverflow(t *testing.T) {
	duration := definition(t, "duration")
	numbers := []string{"999999", "000001", "123456.789", ".5", "1", "9999999"}
	units := []string{"h", "m", "s", "ms", "ns"}
	accepted := 0
	for _, s := range combinations(numbers, units, []string{"", "999999"}, []string{"", "h", "m"}, []string{"", "999999h", "99999h"}) {
		if duration(s) {
			accepted++
			_, err := time.ParseDuration(s)
			require.NoError(t, err, "%q is accepted by the schema", s)
		}
	}
	require.Greater(t, accepted, 100)
	require.True(t, duration("999999h999999h99999h"))
	require.False(t, duration("9999999h"), "7 digits")
	require.False(t, duration("999999h999999h999999h"), "21 characters")
}

// The schema's names, label keys and values, environment variable names and
// ConfigMap keys accept exactly what Kubernetes' own validation accepts (the
// contract's stricter custom labels: a subset of it).
func TestNamesAgreeWithKubernetesValidation(t *testing.T) {
	ok := func(errs []string) bool { return len(errs) == 0 }
	exact := map[string]func(string) bool{
		"dnsLabel":     func(s string) bool { return ok(validation.IsDNS1123Label(s)) },
		"dnsSubdomain": func(s string) bool { return ok(validation.IsDNS1123Subdomain(s)) },
		"jobName":      func(s string) bool { return ok(validation.IsDNS1035Label(s)) && len(s) <= 50 },
		"labelKey":     func(s string) bool { return ok(validation.IsQualifiedName(s)) },
		"labelValue":   func(s string) bool { return ok(validation.IsValidLabelValue(s)) && s != "" },
		"envVarName":   func(s string) bool { return ok(validation.IsEnvVarName(s)) },
	}
	subsets := map[string]func(string) bool{
		"customLabelKey":   exact["labelKey"],
		"customLabelValue": exact["labelValue"],
	}
	schemaOf := map[string]func(any) bool{}
	for name := range exact {
		schemaOf[name] = definition(t, name)
	}
	for name := range subsets {
		schemaOf[name] = definition(t, name)
	}
	// A known gap: the schema checks a label key's prefix (a DNS name) for
	// its form and the whole key for 317 characters, not the prefix for its
	// own 253; a patterned length made the schema take 40 times as long to
	// compile. Kubernetes refuses such a key.
	prefixGap := func(name, s string) bool {
		prefix, _, hasPrefix := strings.Cut(s, "/")
		return strings.Contains(name, "abelKey") && hasPrefix && len(prefix) > 253 && len(s) <= 317
	}
	for _, s := range nameSamples() {
		for name, k8s := range exact {
			if prefixGap(name, s) {
				require.True(t, schemaOf[name](s), "%s %q", name, s)
				continue
			}
			require.Equal(t, k8s(s), schemaOf[name](s), "%s %q", name, s)
		}
		for name, k8s := range subsets {
			if schemaOf[name](s) && !prefixGap(name, s) {
				require.True(t, k8s(s), "%s %q is accepted but Kubernetes refuses it", name, s)
			}
		}
	}
	key := definition(t, "keyRef")
	for _, s := range nameSamples() {
		require.Equal(t, ok(validation.IsConfigMapKey(s)), key(map[string]any{"name": "x", "key": s}), "ConfigMap key %q", s)
	}
}

// nameSamples are strings around every rule of Kubernetes names: characters,
// first and last characters, prefixes, and lengths at each limit.
func nameSamples() []string {
	samples := combinations([]string{"", "a", "A", "0", "-", ".", "_", "ab.cd/"}, []string{"", "b", "B", "1", "-", ".", "_", "/", " ", "é"}, []string{"", "c", "9", "-", "_", "."})
	for _, n := range []int{49, 50, 51, 62, 63, 64, 252, 253, 254} {
		samples = append(samples, strings.Repeat("a", n), strings.Repeat("a", n)+"/x", "x/"+strings.Repeat("a", n), strings.Repeat("a.", n/2)+"b")
	}
	return samples
}

// Image references are what container runtimes parse (the reference grammar
// of distribution/reference, used by containerd and CRI-O).
func TestImagesAgreeWithTheReferenceGrammar(t *testing.T) {
	image := definition(t, "image")
	for _, s := range combinations(
		[]string{"", "ghcr.io/", "localhost:5000/", "Registry.Example.com/", "[::1]:5000/", "bad host/"},
		[]string{"busybox", "org/image", "Org/Image", "my_image", "my__image", "a-b", "-a", "image."},
		[]string{"", ":latest", ":v1.2_RC-3", ":bad tag", ":", "@sha256:" + strings.Repeat("a", 64), "@sha256:abc"},
	) {
		_, err := reference.ParseNormalizedNamed(s)
		require.Equal(t, err == nil, image(s), "image %q", s)
	}
}

func TestImageFix(t *testing.T) {
	for in, want := range map[string]string{"Busybox": "busybox", "ghcr.io/Org/Image:V1": "ghcr.io/org/image:V1", " busybox ": "busybox", "localhost:5000/My:Tag": "localhost:5000/my:Tag"} {
		require.Equal(t, want, imageFix(in), in)
	}
}
