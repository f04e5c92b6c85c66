package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"
)

// ValuesFile writes the chart's values.yaml from the schema: every setting in
// schema order, grouped by section, with its description, its allowed values,
// an example, and its default. Settings without a default are listed empty
// (null), except the required ones, which every settings.yaml sets itself.
func ValuesFile(s *Schema) []byte {
	var b bytes.Buffer
	b.WriteString("# Default settings of the chart, one per key of schema/settings.schema.json.\n")
	b.WriteString("#\n# This file is generated from that schema (make generate): edit the schema, not this file.\n")
	b.WriteString("# A settings.yaml holds only the keys it changes; jobName and containerImage have no\n")
	b.WriteString("# default and every settings.yaml sets them.\n")
	section := ""
	for _, p := range s.Properties {
		if p.Schema.Section != section {
			section = p.Schema.Section
			rule := strings.Repeat("#", 78)
			fmt.Fprintf(&b, "\n%s\n# %s\n%s\n", rule, section, rule)
		}
		b.WriteString("\n")
		required := slices.Contains(s.Required, p.Name) && p.Schema.Default == nil
		heading := p.Name
		if required {
			heading += " (required)"
		}
		writeComment(&b, heading+": "+p.Schema.Description)
		if enum := enumWords(p.Schema); enum != "" {
			writeComment(&b, "One of: "+enum+".")
		}
		if ex := p.Schema.Examples; len(ex) > 0 {
			b.WriteString("# For example:\n")
			for _, line := range strings.Split(strings.TrimSuffix(yamlOf(p.Name, ex[0]), "\n"), "\n") {
				b.WriteString("#   " + line + "\n")
			}
		}
		switch {
		case p.Schema.Default != nil:
			b.WriteString(yamlOf(p.Name, p.Schema.Default))
		case !required:
			b.WriteString(p.Name + ":\n")
		}
	}
	return b.Bytes()
}

func enumWords(s *Schema) string {
	var words []string
	for _, v := range s.Resolved().Enum {
		if v != nil {
			words = append(words, fmt.Sprint(v))
		}
	}
	return strings.Join(words, ", ")
}

// yamlOf writes "name: value" as YAML, from a JSON value.
func yamlOf(name string, raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		panic(fmt.Sprintf("settings schema: %s: invalid JSON: %v", name, err))
	}
	return yamlText(map[string]any{name: v})
}

// yamlText writes a value from the schema (a default or an example) as YAML.
func yamlText(v any) string {
	out, err := sigsyaml.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("settings schema: %v", err))
	}
	return string(out)
}

// writeComment writes text as comment lines of at most 100 columns.
func writeComment(b *bytes.Buffer, text string) {
	for _, line := range Wrap(text, 98) {
		b.WriteString("# " + line + "\n")
	}
}
