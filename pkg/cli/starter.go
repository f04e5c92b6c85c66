package cli

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/schema"
)

//go:embed starter.yaml.tmpl
var starterTemplate string

// starter writes the settings.yaml generator init gives for a job kind: the
// keys a first job needs, set, and common optional ones as commented examples,
// each with the schema's description. schemaURL goes into the modeline that
// lets editors complete and check the keys; file is the name the comments use.
// Under a profile (nil for none), a key it gives a value is written as a
// comment with that value, and what it says of a key (its default, imposed
// value and rules) is said above it; what it says of the keys the starter
// does not show comes last.
func starter(s *schema.Schema, kind, schemaURL, file string, p *profile.Profile) ([]byte, error) {
	keys := s.Keys()
	values := map[string]any{}
	if p != nil {
		var err error
		if values, err = p.Values(); err != nil {
			return nil, err
		}
	}
	shown := map[string]bool{}
	// about is what the profile says of a key, as comments.
	about := func(key string) string {
		var text string
		for _, line := range p.About(key) {
			for i, l := range schema.Wrap("The profile on "+key+": "+line, 76) {
				text += map[bool]string{true: "# ", false: "#   "}[i == 0] + l + "\n"
			}
		}
		return text
	}
	// yamlOf writes key: value as a settings file would, commented or not.
	yamlOf := func(key string, value any, commented bool) (string, error) {
		raw, err := json.Marshal(value)
		if err != nil {
			return "", err
		}
		text := strings.TrimSuffix(schema.YAMLAt(key, raw), "\n")
		if commented {
			text = "# " + strings.ReplaceAll(text, "\n", "\n# ")
		}
		return text, nil
	}
	set := func(key string, value any) (string, error) {
		shown[key] = true
		if p == nil {
			return yamlOf(key, value, false)
		}
		if v, ok := values[key]; ok {
			text, err := yamlOf(key, v, true)
			return about(key) + text, err
		}
		text, err := yamlOf(key, value, false)
		return about(key) + text, err
	}
	rest := func() (string, error) {
		if p == nil {
			return "", nil
		}
		text := "\n\n# The profile also gives every job:"
		n := 0
		for _, k := range keys {
			if shown[k.Path] {
				continue
			}
			lines := about(k.Path)
			if lines == "" {
				continue
			}
			n++
			text += "\n" + lines
			if v, ok := values[k.Path]; ok {
				value, err := yamlOf(k.Path, v, true)
				if err != nil {
					return "", err
				}
				text += value + "\n"
			}
		}
		if n == 0 {
			return "", nil
		}
		return strings.TrimSuffix(text, "\n"), nil
	}
	describe := func(path string) (string, error) {
		k, ok, _ := keys.Find(path)
		if !ok {
			return "", fmt.Errorf("the schema has no key %s", path)
		}
		var lines []string
		for _, line := range schema.Wrap(k.Description, 78) {
			lines = append(lines, "# "+line)
		}
		return strings.Join(lines, "\n"), nil
	}
	example := func(path string) (string, error) {
		text, err := describe(path)
		if err != nil {
			return "", err
		}
		if p != nil {
			shown[path] = true
			if lines := about(path); lines != "" {
				text += "\n" + strings.TrimSuffix(lines, "\n")
			}
			if v, ok := values[path]; ok {
				value, err := yamlOf(path, v, true)
				return text + "\n" + value, err
			}
		}
		k, _, _ := keys.Find(path)
		if k.Example == nil {
			return "", fmt.Errorf("the schema has no example of %s", path)
		}
		for _, line := range strings.Split(strings.TrimSuffix(k.InContext(k.Example), "\n"), "\n") {
			text += "\n# " + line
		}
		return text, nil
	}
	t, err := template.New("starter").Option("missingkey=error").
		Funcs(template.FuncMap{"describe": describe, "example": example, "set": set, "profile": rest,
			"list": func(items ...any) []any { return items }}).Parse(starterTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = t.Execute(&b, map[string]string{"Kind": kind, "SchemaURL": schemaURL, "File": file})
	return b.Bytes(), err
}
