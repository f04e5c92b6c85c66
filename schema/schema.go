// Package schema holds settings.schema.json, the single source of the settings
// contract, and its model: the keys it describes, with their types, defaults,
// examples and rules, from which come generator explain, the did-you-mean of
// unknown keys, and the files generated from the schema (go generate; see
// ./generate): chart/values.schema.json, an exact copy, so that helm template
// validates settings as the generator does; editor.schema.json, the schema of
// a settings file as its user writes it, for editors; chart/values.yaml; the
// settings reference; and the schema without its annotations, which the
// generator's validator compiles.
package schema

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
)

//go:generate go run ./generate

// JSON is the settings schema document (JSON Schema draft-07): the schema of
// the chart's values, which Helm checks after merging the settings over the
// chart's defaults (values.yaml).
//
//go:embed settings.schema.json
var JSON []byte

// EditorJSON is the schema of a settings file as its user writes it, before
// the chart's defaults apply, for editors: generated from JSON (see
// ./generate), it requires no key that has a default, and accepts null where
// the merged values would lack the key.
//
//go:embed editor.schema.json
var EditorJSON []byte

// Model is the embedded schema read as a model, parsed once per process.
var Model = sync.OnceValues(func() (*Schema, error) { return Parse(JSON) })

// IndexJSON is every key of the schema with its types and defaults, made
// from it by go generate (./generate): what a profile needs of the settings'
// keys, read without the whole schema, whose model takes milliseconds to
// read.
//
//go:embed index.json
var IndexJSON []byte

// Index is the keys of IndexJSON, read once per process: each with its Path,
// Type, Types, Default and KindDefaults, and nothing else.
var Index = sync.OnceValues(func() (Keys, error) {
	var entries []indexEntry
	if err := json.Unmarshal(IndexJSON, &entries); err != nil {
		return nil, fmt.Errorf("schema/index.json: %w", err)
	}
	keys := make(Keys, len(entries))
	for i, e := range entries {
		keys[i] = Key{Path: e.Path, Type: e.Type, Types: e.Types, Default: e.Default, KindDefaults: e.KindDefaults}
	}
	return keys, nil
})

// indexEntry is a key of IndexJSON.
type indexEntry struct {
	Path         string                     `json:"path"`
	Type         string                     `json:"type"`
	Types        []string                   `json:"types"`
	Default      json.RawMessage            `json:"default,omitempty"`
	KindDefaults map[string]json.RawMessage `json:"kindDefaults,omitempty"`
}

// IndexOf writes the index of keys, as IndexJSON holds it (go generate
// writes it).
func IndexOf(keys Keys) ([]byte, error) {
	entries := make([]indexEntry, len(keys))
	for i, k := range keys {
		entries[i] = indexEntry{Path: k.Path, Type: k.Type, Types: k.Types, Default: k.Default, KindDefaults: k.KindDefaults}
	}
	data, err := json.Marshal(entries)
	return append(data, '\n'), err
}

// ProfileJSON is the schema (JSON Schema draft-07) of a profile: the
// defaults, imposed values and rules a platform team gives every job of its
// cluster (pkg/profile). generator schema --profile prints it.
//
//go:embed profile.schema.json
var ProfileJSON []byte

// ProfileModel is the profile's schema read as a model, parsed once per
// process.
var ProfileModel = sync.OnceValues(func() (*Schema, error) { return Parse(ProfileJSON) })
