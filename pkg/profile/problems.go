package profile

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
)

// Problems are what is wrong with the profile that only the settings'
// validator finds: a default or imposed value of the wrong type or format, or
// under a key that does not exist; and a default (the profile's, or the
// chart's where the profile gives none) that breaks one of the profile's own
// rules. They are found once, placed in the profile's own text; none means
// the profile can be applied.
func (p *Profile) Problems() diag.List { return p.problems() }

func (p *Profile) check() diag.List {
	v, err := validate.Default()
	if err != nil {
		return diag.List{{Message: err.Error()}}
	}
	own, err := (&settings.Input{}).Over(p.Layers())
	if err != nil {
		return diag.List{{Message: err.Error()}}
	}
	// Only whole settings must have every key they need: a profile's
	// defaults are a part, which users' files complete.
	if problems := own.Locate(v.Keys(own.Values)); len(problems) > 0 {
		return problems
	}
	merged, err := (&settings.Input{}).Over(append([]settings.Layer{{Name: "the chart's defaults", Values: chartDefaults()}}, p.Layers()...))
	if err != nil {
		return diag.List{{Message: err.Error()}}
	}
	var problems diag.List
	for _, r := range p.rules {
		for _, f := range r.find(merged.Values) {
			if !f.set || r.schema == nil || keeps(r.schema, f.value) {
				continue
			}
			if _, ours := settings.ValueAt(own.Values, f.path); ours {
				problems = append(problems, own.Locate([]diag.Diagnostic{{Path: f.path,
					Message: fmt.Sprintf("%s breaks the profile's own rule (%s; %s): %s; change the value, or the rule", show(f.value), describe(r.schema), r.at, r.message)}})...)
				continue
			}
			problems = append(problems, r.part.in.Locate([]diag.Diagnostic{{Path: append(r.path[:len(r.path):len(r.path)], "key"),
				Message: fmt.Sprintf("the chart's default %s: %s breaks this rule, so that every job would have to set %s; give %s a default that keeps the rule, under defaults", r.key.Path, show(f.value), r.key.Path, r.key.Path)}})...)
		}
	}
	return problems
}

// chartDefaults are the defaults of the settings' top-level keys, as the
// schema gives them (and the chart's values.yaml holds them).
func chartDefaults() map[string]any {
	keys, err := settingsKeys()
	defaults := map[string]any{}
	if err != nil {
		return defaults
	}
	for _, k := range keys {
		if k.Default == nil || strings.ContainsAny(k.Path, ".[") {
			continue
		}
		var v any
		if json.Unmarshal(k.Default, &v) == nil {
			defaults[k.Path] = v
		}
	}
	return defaults
}
