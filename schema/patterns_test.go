package schema

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/distribution/reference"
	"github.com/stretchr/testify/require"
	"github.com/xeipuuv/gojsonschema"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The schema's patterns are proven equal to what Kubernetes, Go and container
// runtimes accept, by differential tests over samples around every rule.

// definition compiles one definition of the settings schema on its own, to
// ask it about single values.
func definition(t *testing.T, name string) func(value any) bool {
	t.Helper()
	doc := map[string]any{}
	require.NoError(t, json.Unmarshal(JSON, &doc))
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

// The quantity pattern of a CPU amount accepts exactly the quantities
// Kubernetes parses, without a sign; that of a memory size the same, but for
// units smaller than a byte: m, u, n and negative exponents.
func TestQuantityPatternAgreesWithKubernetes(t *testing.T) {
	cpu := definition(t, "cpu")
	memory := definition(t, "memory")
	numbers := []string{"0", "1", "100", "1.5", ".5", "5.", "1e3", "1E3", "1e-3", "1E-3", "1e+3", "1.5e2", "1e"}
	suffixes := []string{"", "m", "k", "K", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "mi", "gi", "B", "GB", "GiB", " Gi"}
	for _, s := range combinations([]string{"", "-", "+"}, numbers, suffixes) {
		_, err := resource.ParseQuantity(s)
		unsigned := !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+")
		require.Equal(t, err == nil && unsigned, cpu(s), "quantity %q", s)
		subByte := strings.HasSuffix(s, "m") || strings.HasSuffix(s, "u") || strings.HasSuffix(s, "n") || strings.Contains(strings.ToLower(s), "e-")
		require.Equal(t, err == nil && unsigned && !subByte, memory(s), "memory %q", s)
	}
	// Kubernetes reads a bare suffix or exponent ("Gi", "e3") as zero; the
	// schema wants a number.
	for _, s := range append(suffixes, "e3") {
		require.False(t, cpu(s), "quantity %q", s)
		require.False(t, memory(s), "memory %q", s)
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

// The schema's names, label keys and values, environment variable names,
// ConfigMap keys and PriorityClass names accept exactly what Kubernetes' own validation accepts (the
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
		// Kubernetes reserves the system- prefix for its own PriorityClasses.
		"priorityClassName": func(s string) bool { return ok(validation.IsDNS1123Subdomain(s)) && !strings.HasPrefix(s, "system-") },
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
	samples = append(samples, "system-cluster-critical", "system-", "systems", "system.x", "x-system-y")
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
