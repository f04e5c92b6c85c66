// Package schema holds settings.schema.json, the single source of the settings
// contract, and its model: the keys it describes, with their types, defaults,
// examples and rules, from which come generator explain, the did-you-mean of
// unknown keys, and the files generated from the schema (go generate; see
// ./generate): chart/values.schema.json, an exact copy, so that helm template
// validates settings as the generator does; chart/values.yaml; and the
// settings reference.
package schema

import (
	_ "embed"
	"sync"
)

//go:generate go run ./generate

// JSON is the settings schema document (JSON Schema draft-07).
//
//go:embed settings.schema.json
var JSON []byte

// Model is the embedded schema read as a model, parsed once per process.
var Model = sync.OnceValues(func() (*Schema, error) { return Parse(JSON) })
