package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/torchwrap/generator/schema"
)

// valuesFile writes the chart's values.yaml from the schema: every setting in
// schema order, grouped by section, with its description, its allowed values,
// an example, and its default. Settings without a default are listed empty
// (null), except the required ones, which every settings.yaml sets itself.
func valuesFile(s *schema.Schema) []byte {
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
			for _, line := range strings.Split(strings.TrimSuffix(schema.YAMLAt(p.Name, ex[0]), "\n"), "\n") {
				b.WriteString("#   " + line + "\n")
			}
		}
		switch {
		case p.Schema.Default != nil:
			b.WriteString(schema.YAMLAt(p.Name, p.Schema.Default))
		case !required:
			b.WriteString(p.Name + ":\n")
		}
	}
	return b.Bytes()
}

func enumWords(s *schema.Schema) string {
	var words []string
	for _, v := range s.Resolved().Enum {
		if v != nil {
			words = append(words, fmt.Sprint(v))
		}
	}
	return strings.Join(words, ", ")
}

// writeComment writes text as comment lines of at most 100 columns.
func writeComment(b *bytes.Buffer, text string) {
	for _, line := range schema.Wrap(text, 98) {
		b.WriteString("# " + line + "\n")
	}
}
