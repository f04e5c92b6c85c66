package main

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xeipuuv/gojsonschema"
	"helm.sh/helm/v3/pkg/chartutil"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

// The editor schema gives a settings file the verdict the source schema gives
// the merged values, part by part: here a kind and a count with defaults, a
// name that values.yaml holds as null, and an id it does not hold. Left out,
// kind is a; set to null, it is left out of the merged values.
func TestEditorSchemaRewritesWhatDefaultsChange(t *testing.T) {
	source := `{
  "type": "object",
  "required": ["kind", "count", "id"],
  "properties": {
    "kind": {"enum": ["a", "b"], "default": "a"},
    "count": {"type": "integer", "default": 1},
    "name": {"type": ["string", "null"]},
    "id": {"type": "string"}
  },
  "allOf": [
    {"if": {"properties": {"kind": {"const": "b"}}}, "then": {"required": ["name"], "properties": {"name": {"type": "string"}}}},
    {"if": {"not": {"properties": {"kind": {"const": "a"}}}}, "then": {"properties": {"count": {"minimum": 2}}}},
    {"if": {"required": ["count"]}, "then": true},
    {"if": {"properties": {"name": {"type": "null"}}}, "else": false}
  ]
}`
	values := "kind: a\ncount: 1\nname:\n"
	got, err := editorSchema([]byte(source), []byte(values))
	require.NoError(t, err)
	require.JSONEq(t, `{
  "$comment": `+quoted(editorComment)+`,
  "type": "object",
  "required": ["id"],
  "properties": {
    "kind": {"enum": ["a", "b"], "default": "a"},
    "count": {"type": "integer", "default": 1},
    "name": {"type": ["string", "null"]},
    "id": {"type": "string"}
  },
  "allOf": [
    {"if": {"required": ["kind"], "properties": {"kind": {"anyOf": [{"const": "b"}, {"type": "null"}]}}}, "then": {"required": ["name"], "properties": {"name": {"type": "string"}}}},
    {"if": {"not": {"properties": {"kind": {"anyOf": [{"const": "a"}, {"type": "null"}]}}}}, "then": {"properties": {"count": {"minimum": 2}}, "required": ["count"]}},
    {"if": {"properties": {"count": {"allOf": [{"not": {"type": "null"}}, {}]}}}, "then": true},
    {"if": {"properties": {"name": {"type": "null"}}}, "else": false}
  ]
}`, string(got))
}

// A keyword the rewriting does not know, on a part that checks the whole
// file, is refused rather than copied unchanged.
func TestEditorSchemaRefusesAKeywordItCannotRewrite(t *testing.T) {
	_, err := editorSchema([]byte(`{"properties": {"a": {"default": 1}}, "allOf": [{"minProperties": 2}]}`), []byte("a: 1\n"))
	require.EqualError(t, err, "settings schema: #/allOf/0/minProperties checks the whole settings, and the editor schema cannot tell how the defaults of values.yaml change its verdict")
}

func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Over every settings file of the repository that the loader reads, and each
// example and starter with each key of values.yaml set to null or left out,
// the editor schema's verdict on the file is the settings schema's verdict on
// the file merged over the chart's defaults, as Helm merges it.
func TestEditorSchemaJudgesTheFileAsTheSchemaJudgesTheMergedValues(t *testing.T) {
	c, err := chartfiles.Load()
	require.NoError(t, err)
	source, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schema.JSON))
	require.NoError(t, err)
	editor, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schema.EditorJSON))
	require.NoError(t, err)
	judge := func(name string, file map[string]any) {
		t.Helper()
		merged, err := chartutil.CoalesceValues(c, file)
		require.NoError(t, err)
		want, err := source.Validate(gojsonschema.NewGoLoader(map[string]any(merged)))
		require.NoError(t, err)
		got, err := editor.Validate(gojsonschema.NewGoLoader(file))
		require.NoError(t, err)
		require.Equal(t, want.Valid(), got.Valid(), "%s: the settings schema says %v of the merged values, the editor schema %v of the file", name, want.Errors(), got.Errors())
	}
	load := func(file string) (map[string]any, error) {
		in, err := settings.Load(settings.Options{Files: []string{file}})
		if err != nil {
			return nil, err
		}
		return in.Values, nil
	}
	for _, f := range cases.AllSettings(t) {
		if values, err := load(f); err == nil { // else refused by the loader, before any schema
			judge(f, values)
		}
	}
	for _, f := range append(cases.Examples(t), cases.Starters(t)...) {
		values, err := load(f)
		require.NoError(t, err)
		for key := range c.Values {
			judge(f+" with "+key+" null", with(values, key, nil))
			judge(f+" without "+key, without(values, key))
		}
	}
}

// with is a copy of values with key set to value.
func with(values map[string]any, key string, value any) map[string]any {
	out := maps.Clone(values)
	out[key] = value
	return out
}

// without is a copy of values without key.
func without(values map[string]any, key string) map[string]any {
	out := maps.Clone(values)
	delete(out, key)
	return out
}
