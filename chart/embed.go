// Package chart embeds the Helm chart of this directory into the generator
// binary. The chart is also used as it is, with helm template, so this file is
// left out of the chart by .helmignore.
package chart

import "embed"

// Files holds the chart files a render needs. values.schema.json is left out:
// the generator validates settings itself, against schema/settings.schema.json,
// of which values.schema.json is an exact copy for Helm's users.
//
//go:embed Chart.yaml values.yaml all:templates
var Files embed.FS
