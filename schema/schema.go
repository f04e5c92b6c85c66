// Package schema holds settings.schema.json, the single source of the settings
// contract. chart/values.schema.json is an exact copy of it (a test checks), so
// that helm template validates settings the same way the generator does.
package schema

import _ "embed"

// JSON is the settings schema document (JSON Schema draft-07).
//
//go:embed settings.schema.json
var JSON []byte
