package profile

import (
	"bytes"
	"fmt"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// What a profile says, in words: of one key (explain), of itself (profile
// validate), and as one file (profile get).

// About says what the profile says of a settings key (as Keys names it),
// a line each: its default, its imposed value, its rules; none when the
// profile says nothing of it.
func (p *Profile) About(key string) []string {
	var lines []string
	path := diag.ParsePath(key)
	if !strings.Contains(key, "[]") {
		for i := len(p.parts) - 1; i >= 0; i-- {
			pt := p.parts[i]
			if v, ok := settings.ValueAt(pt.defaults.Values, path); ok {
				in := settings.Parsed(pt.source, pt.defaults.Node, pt.defaults.Values)
				at := in.Locate([]diag.Diagnostic{{Path: path}})[0]
				lines = append(lines, fmt.Sprintf("default %s (%s:%d)", show(v), at.Source, at.Line))
				break
			}
		}
	}
	for _, im := range p.imposed {
		if im.path.String() == key {
			lines = append(lines, fmt.Sprintf("imposed %s, which no one may change (%s): %s", show(im.value), im.at, im.message))
		}
	}
	for _, r := range p.rules {
		if r.key.Path != key {
			continue
		}
		what := describe(r.schema)
		if r.required {
			what = strings.TrimPrefix(what+", required", ", ")
		}
		lines = append(lines, fmt.Sprintf("rule: %s (%s): %s", what, r.at, r.message))
	}
	return lines
}

// Summary counts what the profile holds, for one line: "4 defaults, 1
// imposed value, 3 rules; the API server checks 3 of the 4 rules and imposed
// values" (the keys the defaults set once merged).
func (p *Profile) Summary() string {
	in, err := (&settings.Input{}).Over(p.defaultLayers())
	if err != nil {
		return err.Error()
	}
	text := fmt.Sprintf("%s, %s, %s", schema.Count(len(in.Values), "default"), schema.Count(len(p.imposed), "imposed value"), schema.Count(len(p.rules), "rule"))
	if all := len(p.rules) + len(p.imposed); all > 0 {
		_, validations, _ := p.Policy()
		text += fmt.Sprintf("; the API server checks %d of the %d rules and imposed values", len(validations), all)
	}
	return text
}

// File is the profile as one file, which applies as its parts together
// do: their defaults merged, every imposed value and every rule; what the
// cluster's profile is, saved for working offline. header is a comment,
// its first lines.
func (p *Profile) File(header string) ([]byte, error) {
	var descriptions []string
	for _, pt := range p.parts {
		if pt.description != "" {
			descriptions = append(descriptions, pt.description)
		}
	}
	in, err := (&settings.Input{}).Over(p.defaultLayers())
	if err != nil {
		return nil, err
	}
	defaults := in.Values
	var imposed, rules []any
	for _, im := range p.imposed {
		imposed = append(imposed, map[string]any{"key": im.path.String(), "value": im.value, "message": im.message})
	}
	for _, r := range p.rules {
		item := map[string]any{"key": r.key.Path, "message": r.message}
		if r.schema != nil {
			item["schema"] = r.schema
		}
		if r.required {
			item["required"] = true
		}
		rules = append(rules, item)
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSuffix(header, "\n"), "\n") {
		b.WriteString("# " + line + "\n")
	}
	for _, part := range []struct {
		key   string
		value any
		set   bool
	}{
		{"apiVersion", APIVersion, true},
		{"kind", Kind, true},
		{"description", strings.Join(descriptions, "; "), len(descriptions) > 0},
		{"defaults", defaults, len(defaults) > 0},
		{"imposed", imposed, len(imposed) > 0},
		{"rules", rules, len(rules) > 0},
	} {
		if !part.set {
			continue
		}
		data, err := sigsyaml.Marshal(map[string]any{part.key: part.value})
		if err != nil {
			return nil, err
		}
		b.Write(data)
	}
	return b.Bytes(), nil
}

// defaultLayers are the parts' defaults, in order.
func (p *Profile) defaultLayers() []settings.Layer {
	var layers []settings.Layer
	for _, pt := range p.parts {
		if pt.defaults.Values != nil {
			layers = append(layers, pt.defaults)
		}
	}
	return layers
}
