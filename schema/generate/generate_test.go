package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
)

// Every file made from the schema is what generate makes now: a stale one
// means the schema changed without make generate.
func TestGeneratedFilesAreFresh(t *testing.T) {
	files, err := generate(cases.Path(t))
	require.NoError(t, err)
	require.Len(t, files, 8)
	for name, want := range files {
		got, err := os.ReadFile(cases.Path(t, name))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s is stale: run make generate and review the diff", filepath.ToSlash(name))
	}
}

// The validator's schema leaves out what only people read, at every depth,
// and nothing else: not a property that happens to be called description, nor
// the data of enum and const.
func TestValidatorSchemaLeavesOutOnlyAnnotations(t *testing.T) {
	got, err := validatorSchema([]byte(`{
		"$schema": "http://json-schema.org/draft-07/schema#", "title": "t", "description": "d",
		"properties": {
			"description": {"type": "string", "description": "d", "default": "x", "examples": ["x"], "x-section": "s"},
			"default": {"enum": [{"description": "kept"}], "x-error": "e", "$comment": "c"},
			"list": {"items": {"anyOf": [{"const": {"title": "kept"}, "description": "d"}]}, "maxItems": 2.50}
		},
		"definitions": {"name": {"pattern": "^a$", "x-error": "e"}},
		"allOf": [{"x-error": "e", "if": {"required": ["a"], "description": "d"}, "then": {"not": {"x-error": "e"}}}]
	}`))
	require.NoError(t, err)
	require.JSONEq(t, `{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"properties": {
			"description": {"type": "string"},
			"default": {"enum": [{"description": "kept"}]},
			"list": {"items": {"anyOf": [{"const": {"title": "kept"}}]}, "maxItems": 2.50}
		},
		"definitions": {"name": {"pattern": "^a$"}},
		"allOf": [{"if": {"required": ["a"]}, "then": {"not": {}}}]
	}`, string(got))
	require.Contains(t, string(got), `"maxItems":2.50`, "numbers as written")
}
