package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
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
			for _, line := range strings.Split(strings.TrimSuffix(yamlAt(p.Name, ex[0]), "\n"), "\n") {
				b.WriteString("#   " + line + "\n")
			}
		}
		switch {
		case p.Schema.Default != nil:
			b.WriteString(yamlAt(p.Name, p.Schema.Default))
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

// yamlAt writes a JSON value of the schema (a default or an example) as the
// YAML a settings file holds for the key at path: under its parents, in a list
// where the path says [] (environmentVariables[].name), keeping the order of
// the value's own keys.
func yamlAt(path string, raw json.RawMessage) string {
	n := valueNode(raw)
	segments := strings.Split(path, ".")
	for i := len(segments) - 1; i >= 0; i-- {
		name, list := strings.CutSuffix(segments[i], "[]")
		if list {
			n = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{n}}
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{key, n}}
	}
	return yamlString(n)
}

// valueNode reads a JSON value of the schema as a YAML node in plain style.
func valueNode(raw json.RawMessage) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil || len(doc.Content) != 1 {
		panic(fmt.Sprintf("settings schema: invalid JSON value %s: %v", raw, err))
	}
	var plain func(*yaml.Node)
	plain = func(n *yaml.Node) {
		n.Style = 0
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(doc.Content[0])
	return doc.Content[0]
}

// yamlString writes a node as YAML indented by two spaces; the encoder quotes
// strings that would read as another type.
func yamlString(n *yaml.Node) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		panic(fmt.Sprintf("settings schema: %v", err))
	}
	return b.String()
}

// writeComment writes text as comment lines of at most 100 columns.
func writeComment(b *bytes.Buffer, text string) {
	for _, line := range Wrap(text, 98) {
		b.WriteString("# " + line + "\n")
	}
}
