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

// ProfileJSON is the schema (JSON Schema draft-07) of a profile: the
// defaults, imposed values and rules a platform team gives every job of its
// cluster (pkg/profile). generator schema --profile prints it.
//
//go:embed profile.schema.json
var ProfileJSON []byte

// ProfileModel is the profile's schema read as a model, parsed once per
// process.
var ProfileModel = sync.OnceValues(func() (*Schema, error) { return Parse(ProfileJSON) })
