package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/torchwrap/generator/schema"
)

// valuesFile writes the chart's values.yaml from the schema: every setting in
// schema order, grouped by section, with its description, its allowed values,
// an example, and its default. Settings without a default are listed empty
// (null), except the required ones, which every settings.yaml sets itself, and
// those whose default follows jobKind, which the chart sets
// (kindDefaultsTemplate).
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
		case p.Schema.KindDefaults != nil:
			// Left out, for the chart to tell a key left unset (its default
			// follows jobKind) from one set to null (torchwrap.kindDefaults).
			writeComment(&b, "Unset, it follows jobKind: "+schema.Key{Default: p.Schema.Default, KindDefaults: p.Schema.KindDefaults}.DefaultText()+".")
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

// kindDefaultsTemplate writes the chart's torchwrap.kindDefaults: for each
// setting whose default follows jobKind, its default ("") and those of the
// kinds that differ, as JSON, which torchwrap.manifest applies to a setting
// the user left unset.
func kindDefaultsTemplate(s *schema.Schema) ([]byte, error) {
	defaults := map[string]map[string]json.RawMessage{}
	for _, p := range s.Properties {
		if p.Schema.KindDefaults != nil {
			defaults[p.Name] = maps.Clone(p.Schema.KindDefaults)
			defaults[p.Name][""] = p.Schema.Default
		}
	}
	data, err := json.Marshal(defaults)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("{{- /*\nGenerated from schema/settings.schema.json (x-kind-defaults) by make generate:\nedit the schema, not this file.\n\n")
	b.WriteString("torchwrap.kindDefaults: the settings whose default follows jobKind, each\nwith its default (\"\") and the kinds' own. values.yaml leaves them out, so that\na setting left unset can be told from one set to null.\n*/ -}}\n")
	fmt.Fprintf(&b, "{{- define \"torchwrap.kindDefaults\" -}}\n%s\n{{- end -}}\n", data)
	return b.Bytes(), nil
}
