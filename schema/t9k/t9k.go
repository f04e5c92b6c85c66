// Package t9k holds our schema of T9k's PyTorchTrainingJob and DeepSpeedJob,
// which T9k publishes no CRD for. Only tests use it: they build the two CRDs
// from it (pkg/fidelity) to check every T9k job the generator renders.
package t9k

import _ "embed"

// JSON is the schema document (JSON Schema draft-07, kept to what a CRD's
// structural schema can say).
//
//go:embed jobs.schema.json
var JSON []byte
