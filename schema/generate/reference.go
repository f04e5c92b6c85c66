package main

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	"github.com/torchwrap/generator/schema"
)

// reference writes the settings reference, docs/settings.md: every key of the
// schema, by section, with what generator explain tells about it.
func reference(s *schema.Schema) []byte {
	var b bytes.Buffer
	b.WriteString("# Settings reference\n\n")
	b.WriteString(generatedNote)
	b.WriteString(s.Description + "\n\n")
	writeKeys(&b, s)
	return b.Bytes()
}

// chartReadme writes the chart's README.md, which helm show readme and chart
// registries display: the text of the template (chart/README.md.gotmpl: how to
// use the chart), with the settings reference where it says {{ .Reference }}.
func chartReadme(s *schema.Schema, tmpl []byte) ([]byte, error) {
	t, err := template.New("README.md.gotmpl").Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, err
	}
	var keys bytes.Buffer
	keys.WriteString(generatedNote)
	writeKeys(&keys, s)
	var b bytes.Buffer
	if err := t.Execute(&b, map[string]string{"Reference": keys.String()}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

const generatedNote = "This reference is generated from schema/settings.schema.json (`make generate`); edit the\nschema, not this file.\n\n"

// writeKeys writes a section per x-section, and in it every key with its
// fields: top-level keys as ### headings, their fields as #### headings.
func writeKeys(b *bytes.Buffer, s *schema.Schema) {
	keys := s.Keys()
	var sections []string
	bySection := map[string][]string{}
	for _, k := range keys {
		if strings.ContainsAny(k.Path, ".[") {
			continue
		}
		if _, seen := bySection[k.Section]; !seen {
			sections = append(sections, k.Section)
		}
		bySection[k.Section] = append(bySection[k.Section], "`"+k.Path+"`")
	}
	b.WriteString("Sections:\n\n")
	for _, section := range sections {
		fmt.Fprintf(b, "- [%s](#%s): %s\n", section, anchor(section), strings.Join(bySection[section], ", "))
	}
	section := ""
	for _, k := range keys {
		if k.Section != section {
			section = k.Section
			fmt.Fprintf(b, "\n## %s\n", section)
		}
		heading := "###"
		if strings.ContainsAny(k.Path, ".[") {
			heading = "####"
		}
		fmt.Fprintf(b, "\n%s `%s`\n\n%s\n\n", heading, k.Path, k.Description)
		fmt.Fprintf(b, "- Type: %s\n", k.Type)
		if k.Required {
			b.WriteString("- Required\n")
		}
		if k.Default != nil {
			fmt.Fprintf(b, "- Default: `%s`\n", k.DefaultText())
		}
		if len(k.Enum) > 0 {
			var values []string
			for _, v := range k.Enum {
				values = append(values, fmt.Sprintf("`%v`", v))
			}
			fmt.Fprintf(b, "- Allowed values: %s\n", strings.Join(values, ", "))
		}
		for _, rule := range k.Rules {
			fmt.Fprintf(b, "- %s\n", rule)
		}
		if k.Example != nil {
			fmt.Fprintf(b, "- Example:\n\n  ```yaml\n%s  ```\n", indent(k.InContext(k.Example), "  "))
		}
	}
}

// anchor is the id GitHub gives a Markdown heading.
func anchor(heading string) string {
	return strings.ReplaceAll(strings.ToLower(heading), " ", "-")
}

func indent(text, prefix string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, line := range lines {
		if line != "" {
			lines[i] = prefix + line
		}
	}
	return strings.Join(lines, "")
}
