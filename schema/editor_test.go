package schema_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/testdata/cases"
)

// requireServer names the environment variable that makes a missing
// yaml-language-server a failure of the tests that run it rather than a skip:
// make test sets it, after installing the server.
const requireServer = "GENERATOR_REQUIRE_YAML_LANGUAGE_SERVER"

// languageServer is the yaml-language-server that
// testdata/editor/package-lock.json pins, installed by make test (npm ci).
// Without it the test is skipped, unless requireServer is set.
func languageServer(t *testing.T) string {
	t.Helper()
	server := cases.Path(t, "testdata", "editor", "node_modules", ".bin", "yaml-language-server")
	if _, err := os.Stat(server); err != nil {
		if os.Getenv(requireServer) != "" {
			t.Fatalf("yaml-language-server is not installed (%v), and %s is set; make test installs it (npm ci in testdata/editor)", err, requireServer)
		}
		t.Skip("yaml-language-server is not installed in testdata/editor: make test installs it (npm ci) and runs this test")
	}
	return server
}

// unseenByEditors are the invalid cases in which an editor checking the
// editor schema underlines nothing on the line of the generator's first
// problem, with the reason: the rule is not the schema's, or the editor's
// YAML parser reads the file otherwise. The test fails when one of them is
// underlined there after all.
var unseenByEditors = map[string]string{
	"alias-bomb":                    "the loader counts alias expansions, and a schema sees only values (the editor underlines the unknown keys a0 to a9)",
	"control-characters":            "the loader refuses a raw control character, which the editor's YAML parser accepts",
	"control-character-escaped":     "text a manifest cannot carry is refused by pkg/validate and the chart, not by the schema",
	"two-documents":                 "the loader allows one document, and the editor checks each document on its own",
	"dsj-mount-over-ssh":            "a chart check: mount paths against the ones the DeepSpeed launcher needs",
	"customlabels-duplicate-key":    "a chart check: keys unique across list items",
	"customlabels-set-by-settings":  "a chart check: keys against the labels other settings set",
	"elastic-maxpods-below-numpods": "a chart check: compares two values",
	"elastic-minpods-above-numpods": "a chart check: compares two values",
	"exitcodes-in-both":             "a chart check: compares two lists",
	"limit-cpu-below-request":       "a chart check: compares two quantities",
	"limit-memory-below-request":    "a chart check: compares two quantities",
	"roce-gdr-is-the-accelerator":   "a chart check: compares two values",
	"initcontainers-name-pytorch":   "a chart check: names against the training container's",
	"initcontainers-name-twice":     "a chart check: names unique across list items",
	"limitgpus-differs":             "a chart check: compares two values",
	"jobset-name-too-long":          "a chart check: the length of jobName against numPods",
	"mainprogram-open-quote":        "a chart check: splits mainProgram into words as a shell would",
	"podannotations-network-clash":  "a chart check: an annotation that multiNicNetworkName sets",
	"podannotations-topology-clash": "a chart check: annotations that topology sets",
	"podlabels-clash":               "a chart check: labels the generator sets",
	"tolerations-rules":             "a chart check: the fields of a toleration together",
	"volumes-duplicate-names":       "a chart check: names unique across list items",
	"volumes-mountpath-clash":       "a chart check: mount paths against the volumes the generator adds",
	"volumes-name-reserved":         "a chart check: names against the volumes the generator adds",
}

// underlinedElsewhere are the invalid cases in which an editor underlines the
// generator's first problem on another line than the generator names: that
// line, and why. The test fails when the editor underlines the generator's
// line after all.
var underlinedElsewhere = map[string]struct {
	line   int
	reason string
}{
	"mainprogram-list":            {4, "the editor underlines the list, the generator the key that holds it"},
	"setupcommands-block-mapping": {4, "the editor underlines the mapping, the generator the key that holds it"},
	"tensorboard-both-forms":      {6, "the editor underlines the mapping, the generator the key that holds it"},
	"topology-both":               {4, "the editor underlines the mapping, the generator the key that holds it"},
	"yaml-syntax-error":           {5, "the editor's YAML parser reports the error at the item indented less, the generator's on the line before"},
}

// An editor sees settings files as the generator does. yaml-language-server,
// the language server of the YAML support of VS Code, Neovim, Helix and
// others, given the editor schema, underlines nothing in the files the
// generator renders (the golden cases, the examples, the starters), and in
// each invalid case it underlines the line of the generator's first problem,
// unless the case is in unseenByEditors or underlinedElsewhere.
func TestEditorSchemaInALanguageServer(t *testing.T) {
	server := languageServer(t)
	editorSchema := fileURI(cases.Path(t, "schema", "editor.schema.json"))
	start := time.Now()
	lsp := startLSP(t, cases.Path(t), map[string]any{
		"yaml": map[string]any{
			"validate": true,
			"schemas":  map[string]any{editorSchema: "*.yaml"},
			// The catalogues of schemastore.org and of Kubernetes' CRDs are
			// downloaded; without them the server needs no network.
			"schemaStore":        map[string]any{"enable": false},
			"kubernetesCRDStore": map[string]any{"enable": false},
		},
	}, server, "--stdio")

	valid := cases.ValidSettings(t)
	invalid := cases.Invalid(t)
	files := append([]string{}, valid...)
	for _, c := range invalid {
		files = append(files, c.Settings())
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		lsp.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
			"uri": fileURI(file), "languageId": "yaml", "version": 1,
			"text": modeline.ReplaceAllString(string(data), "${1}"+editorSchema),
		}})
	}
	diagnostics := lsp.waitForDiagnostics(t, files)
	t.Logf("yaml-language-server checked %d files in %s", len(files), time.Since(start).Round(time.Millisecond))

	for _, file := range files {
		var schemas []struct{ URI string }
		require.NoError(t, json.Unmarshal(lsp.call("yaml/get/jsonSchema", fileURI(file)), &schemas))
		require.Len(t, schemas, 1, file)
		require.Equal(t, editorSchema, schemas[0].URI, "%s is checked against another schema", file)
	}
	for _, file := range valid {
		require.Empty(t, diagnostics[fileURI(file)], "%s renders, and the editor underlines it", file)
	}
	names := map[string]bool{}
	for _, c := range invalid {
		names[c.Name] = true
	}
	for name := range unseenByEditors {
		require.True(t, names[name], "unseenByEditors lists %s, which is no invalid case", name)
	}
	for name := range underlinedElsewhere {
		require.True(t, names[name], "underlinedElsewhere lists %s, which is no invalid case", name)
	}
	for _, c := range invalid {
		t.Run(c.Name, func(t *testing.T) {
			expected, err := os.ReadFile(filepath.Join(c.Dir, "expected.txt"))
			require.NoError(t, err)
			line := firstLine(t, string(expected))
			got := diagnostics[fileURI(c.Settings())]
			underlined := func(line int) bool {
				for _, d := range got {
					if d.Range.Start.Line+1 == line {
						return true
					}
				}
				return false
			}
			if reason, unseen := unseenByEditors[c.Name]; unseen {
				require.False(t, underlined(line), "the editor underlines line %d after all (%+v): remove %s from unseenByEditors (%s)", line, got, c.Name, reason)
				return
			}
			if elsewhere, ok := underlinedElsewhere[c.Name]; ok {
				require.False(t, underlined(line), "the editor underlines line %d after all (%+v): remove %s from underlinedElsewhere (%s)", line, got, c.Name, elsewhere.reason)
				line = elsewhere.line
			}
			require.True(t, underlined(line), "the generator says\n%sand the editor underlines no line %d: %+v", expected, line, got)
		})
	}
}

// modeline matches the yaml-language-server modeline of a file up to the
// schema's URL: the starters' points at the published schema, which the test
// replaces with the file beside it.
var modeline = regexp.MustCompile(`(?m)^(# yaml-language-server: \$schema=)\S+`)

// firstLine is the line of the first problem in an expected.txt.
func firstLine(t *testing.T, expected string) int {
	t.Helper()
	place := regexp.MustCompile(`^settings\.yaml:(\d+):\d+: `).FindStringSubmatch(expected)
	require.NotNil(t, place, expected)
	line, err := strconv.Atoi(place[1])
	require.NoError(t, err)
	return line
}

// fileURI is the file: URI of an absolute path.
func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// What generator init writes works in an editor at once, offline: the
// modeline names the schema init wrote beside the settings file, and the
// language server, given no schema and no network of its own, checks the file
// against it (a misspelt key is underlined).
func TestInitModelineWorksOffline(t *testing.T) {
	server := languageServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.yaml")
	var out, errOut bytes.Buffer
	require.Equal(t, cli.ExitOK, cli.Run([]string{"init", file}, cli.Streams{Out: &out, Err: &errOut}), errOut.String())
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	text := string(data) + "numGpusPerPd: 8\n"
	lsp := startLSP(t, dir, map[string]any{
		"yaml": map[string]any{
			"validate":           true,
			"schemaStore":        map[string]any{"enable": false},
			"kubernetesCRDStore": map[string]any{"enable": false},
		},
	}, server, "--stdio")
	lsp.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": fileURI(file), "languageId": "yaml", "version": 1, "text": text,
	}})
	diagnostics := lsp.waitForDiagnostics(t, []string{file})[fileURI(file)]

	var schemas []struct{ URI string }
	require.NoError(t, json.Unmarshal(lsp.call("yaml/get/jsonSchema", fileURI(file)), &schemas))
	require.Len(t, schemas, 1)
	require.Equal(t, fileURI(filepath.Join(dir, "generator-0.1.0.schema.json")), schemas[0].URI)
	require.Len(t, diagnostics, 1, "%+v", diagnostics)
	require.Equal(t, strings.Count(text, "\n")-1, diagnostics[0].Range.Start.Line, "%+v", diagnostics)
}

// profilesUnseenByEditors are the bad profiles of testdata/profile/invalid
// whose problem an editor checking the profile's schema cannot see, with the
// reason: what generator profile validate checks beyond that schema.
var profilesUnseenByEditors = map[string]string{
	"chart-default-breaks-rule":  "a rule against the chart's defaults",
	"default-and-imposed":        "a default against an imposed value",
	"default-breaks-rule":        "a default against a rule",
	"default-job-name":           "defaults are any settings to the schema; jobName is refused by the generator",
	"default-wrong-type":         "defaults are any settings to the profile's schema; the settings' schema checks them",
	"unknown-default":            "defaults are any settings to the profile's schema; the settings' schema checks them",
	"imposed-in-list":            "a key is checked against the settings' keys",
	"imposed-twice":              "keys unique across list items",
	"not-yaml":                   "the editor's YAML parser reports an unclosed flow sequence where the file ends, the generator's where it opens",
	"refined-changes-imposed":    "two profiles against each other",
	"refined-default-on-imposed": "two profiles against each other",
	"rule-bad-pattern":           "a pattern is checked as a Go regular expression",
	"rule-enum-type":             "a rule's values against the type of its key",
	"rule-keyword-type":          "a rule's keywords against the type of its key",
	"rule-says-nothing":          "schema or required: one of two keys, checked by the generator",
	"rule-unknown-key":           "a key is checked against the settings' keys",
	"two-documents":              "the editor checks each document on its own",
}

// An editor helps write a profile too: yaml-language-server, given the
// profile's schema (generator schema --profile), underlines nothing in the
// profiles of testdata/profile, and in each bad profile of
// testdata/profile/invalid it underlines the line of the generator's first
// problem, unless the case is in profilesUnseenByEditors.
func TestProfileSchemaInALanguageServer(t *testing.T) {
	server := languageServer(t)
	profileSchema := fileURI(cases.Path(t, "schema", "profile.schema.json"))
	lsp := startLSP(t, cases.Path(t), map[string]any{
		"yaml": map[string]any{
			"validate":           true,
			"schemas":            map[string]any{profileSchema: "*.yaml"},
			"schemaStore":        map[string]any{"enable": false},
			"kubernetesCRDStore": map[string]any{"enable": false},
		},
	}, server, "--stdio")
	valid := []string{cases.Path(t, "testdata", "profile", "cluster.yaml"), cases.Path(t, "testdata", "profile", "team.yaml")}
	invalid := cases.InvalidProfiles(t)
	files := slices.Clone(valid)
	for _, c := range invalid {
		files = append(files, filepath.Join(c.Dir, "profile.yaml"))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		lsp.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
			"uri": fileURI(file), "languageId": "yaml", "version": 1, "text": string(data),
		}})
	}
	diagnostics := lsp.waitForDiagnostics(t, files)
	for _, file := range valid {
		var schemas []struct{ URI string }
		require.NoError(t, json.Unmarshal(lsp.call("yaml/get/jsonSchema", fileURI(file)), &schemas))
		require.Len(t, schemas, 1, file)
		require.Equal(t, profileSchema, schemas[0].URI, "%s names another schema in its first line", file)
		require.Empty(t, diagnostics[fileURI(file)], "%s is a profile, and the editor underlines it", file)
	}
	for _, c := range invalid {
		t.Run(c.Name, func(t *testing.T) {
			expected, err := os.ReadFile(filepath.Join(c.Dir, "expected.txt"))
			require.NoError(t, err)
			place := regexp.MustCompile(`^profile\.yaml:(\d+):\d+: `).FindStringSubmatch(string(expected))
			underlined := false
			if place != nil {
				line, _ := strconv.Atoi(place[1])
				for _, d := range diagnostics[fileURI(filepath.Join(c.Dir, "profile.yaml"))] {
					underlined = underlined || d.Range.Start.Line+1 == line
				}
			}
			if reason, unseen := profilesUnseenByEditors[c.Name]; unseen {
				require.False(t, underlined, "the editor underlines the generator's line after all: remove %s from profilesUnseenByEditors (%s)", c.Name, reason)
				return
			}
			require.True(t, underlined, "the generator says\n%sand the editor underlines not that line: %+v", expected, diagnostics[fileURI(filepath.Join(c.Dir, "profile.yaml"))])
		})
	}
}
