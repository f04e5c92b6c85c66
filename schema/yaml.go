package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultText writes the key's default as a settings file would, followed by
// the defaults that differ by jobKind: "AppWrapper (TrainJob: none)".
func (k Key) DefaultText() string {
	text := strings.TrimSuffix(yamlString(valueNode(k.Default)), "\n")
	var kinds []string
	for _, kind := range slices.Sorted(maps.Keys(k.KindDefaults)) {
		kinds = append(kinds, kind+": "+strings.TrimSuffix(yamlString(valueNode(k.KindDefaults[kind])), "\n"))
	}
	if len(kinds) > 0 {
		text += " (" + strings.Join(kinds, ", ") + ")"
	}
	return text
}

// YAMLAt writes a JSON value of the schema (a default or an example) as the
// YAML a settings file holds for the key at path: under its parents, in a list
// where the path says [] (environmentVariables[].name), keeping the order of
// the value's own keys.
func YAMLAt(path string, raw json.RawMessage) string {
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
