package settings

import (
	"bytes"
	"fmt"
	"strings"
)

// Reference writes the settings reference, docs/settings.md: every key of the
// schema, by section, with what generator explain tells about it.
func Reference(s *Schema) []byte {
	var b bytes.Buffer
	b.WriteString("# Settings reference\n\n")
	b.WriteString(generatedNote)
	b.WriteString(s.Description + "\n\n")
	writeKeys(&b, s)
	return b.Bytes()
}

// ChartReadme writes the chart's README.md, which helm show readme and chart
// registries display: how to use the chart, then the settings reference.
func ChartReadme(s *Schema) []byte {
	var b bytes.Buffer
	b.WriteString(`# torchwrap

A Helm chart that renders a short settings.yaml into one Kubernetes AppWrapper
(workload.codeflare.dev/v1beta2) wrapping a distributed PyTorch training job: a
Kubeflow PyTorchJob, or T9k's PyTorchTrainingJob or DeepSpeedJob. Kueue queues the
AppWrapper; the AppWrapper controller creates the job once Kueue admits it.

` + "```sh\nhelm template chart -f settings.yaml | kubectl apply -f -\n```" + `

The generator command line embeds this chart and renders the same objects, with
messages that point at the line to fix: see the project's README. Settings files
written for the MLBatch pytorchjob-generator chart (1.1.5 to 1.1.12) work unchanged.

`)
	b.WriteString(generatedNote)
	writeKeys(&b, s)
	return b.Bytes()
}

const generatedNote = "This reference is generated from schema/settings.schema.json (`make docs`); edit the\nschema, not this file.\n\n"

// writeKeys writes a section per x-section, and in it every key with its
// fields: top-level keys as ### headings, their fields as #### headings.
func writeKeys(b *bytes.Buffer, s *Schema) {
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

// DefaultText writes the key's default as a settings file would.
func (k Key) DefaultText() string {
	return strings.TrimSuffix(yamlString(valueNode(k.Default)), "\n")
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

// Wrap breaks text into lines of at most width columns, at spaces; a word
// longer than width gets a line of its own.
func Wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
