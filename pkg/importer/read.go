// Package importer reads jobs written by hand (a PyTorchJob, an AppWrapper
// around one, a JobSet, a TrainJob, T9k's PyTorchTrainingJob or DeepSpeedJob)
// back into settings: render read backwards. It derives the settings, renders
// them, and compares what the settings render with the job it read, so that
// every field the settings do not carry is listed with its line, and every
// field the render adds is named.
package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/workspace"
)

// Object is one object of an input file, with the line of each of its fields.
type Object struct {
	Source string // the file's name; "-" is the standard input
	Line   int    // the line the object starts at
	Value  map[string]any
	lines  map[string]int // diag.Path.String() → line
}

// Kind is the object's kind, and its API group.
func (o *Object) Kind() (kind, group string) {
	kind, _ = o.Value["kind"].(string)
	apiVersion, _ := o.Value["apiVersion"].(string)
	group, _, _ = strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = "" // the core group: v1
	}
	return kind, group
}

// WorkspaceOf is the job whose workspace the object carries, when it is a
// ConfigMap of one (workspace.JobLabel); "" otherwise.
func (o *Object) WorkspaceOf() string {
	if kind, group := o.Kind(); kind != "ConfigMap" || group != "" {
		return ""
	}
	return str(dig(o.Value, "metadata", "labels", workspace.JobLabel))
}

// LineOf is the line of the field at path, or of the nearest field above it
// that the file holds.
func (o *Object) LineOf(path diag.Path) int {
	for n := len(path); n > 0; n-- {
		if line, ok := o.lines[path[:n].String()]; ok {
			return line
		}
	}
	return o.Line
}

// Where names the field at path in the file: "file:line".
func (o *Object) Where(path diag.Path) string {
	return fmt.Sprintf("%s:%d", o.Source, o.LineOf(path))
}

// Error is input that cannot be imported at all, at a line of a file.
type Error struct {
	Source string
	Line   int
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.Source, e.Line, e.Msg) }

// Read reads the objects of a file: one YAML document each, empty documents
// skipped. A document that is not an object of Kubernetes, or a List of them,
// is an error that names its line.
func Read(source string, data []byte) ([]*Object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var objects []*Object
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, yamlError(source, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		obj, err := object(source, doc.Content[0])
		if err != nil {
			return nil, err
		}
		if obj != nil {
			objects = append(objects, obj)
		}
	}
	if len(objects) == 0 {
		return nil, &Error{Source: source, Line: 1, Msg: "no object: the file holds no YAML document; give a file with a job in it"}
	}
	return objects, nil
}

// object reads one document; nil for a document that is null.
func object(source string, node *yaml.Node) (*Object, error) {
	at := func(msg string, args ...any) error {
		return &Error{Source: source, Line: node.Line, Msg: fmt.Sprintf(msg, args...)}
	}
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return nil, nil
	}
	if node.Kind != yaml.MappingNode {
		return nil, at("not a Kubernetes object: the document is %s, not a mapping with apiVersion and kind", describe(node))
	}
	var value map[string]any
	if err := node.Decode(&value); err != nil {
		return nil, yamlError(source, err)
	}
	obj := &Object{Source: source, Line: node.Line, Value: jsonValues(value).(map[string]any), lines: map[string]int{}}
	index(node, nil, obj.lines)
	kind, _ := value["kind"].(string)
	apiVersion, _ := value["apiVersion"].(string)
	switch {
	case kind == "" || apiVersion == "":
		return nil, at("not a Kubernetes object: it has no %s; a job file starts with apiVersion and kind", missing(kind, apiVersion))
	case strings.HasSuffix(kind, "List"):
		return nil, at("a %s (as kubectl get -o yaml writes for many objects): import its items instead, one YAML document each, separated by ---", kind)
	}
	return obj, nil
}

func missing(kind, apiVersion string) string {
	switch {
	case kind == "" && apiVersion == "":
		return "apiVersion and no kind"
	case kind == "":
		return "kind"
	}
	return "apiVersion"
}

func describe(node *yaml.Node) string {
	if node.Kind == yaml.SequenceNode {
		return "a list"
	}
	return "a single value"
}

// yamlError is a YAML error as one line at its line: yaml.v3 says "yaml: line
// N: what", or, for a key given twice, "mapping key "kind" already defined at
// line M" at the second one.
func yamlError(source string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var typeErr *yaml.TypeError
	if errors.As(err, &typeErr) && len(typeErr.Errors) > 0 {
		msg = typeErr.Errors[0]
	}
	line := 1
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, found := strings.Cut(rest, ": "); found {
			fmt.Sscan(n, &line)
			msg = after
		}
	}
	if strings.Contains(msg, "already defined") {
		return &Error{Source: source, Line: line, Msg: "not a valid object: " + msg + "; keep one of the two"}
	}
	return &Error{Source: source, Line: line, Msg: "not YAML: " + msg}
}

// index records the line of every field under node, by its path.
func index(node *yaml.Node, path diag.Path, lines map[string]int) {
	switch node.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			p := append(path[:len(path):len(path)], node.Content[i].Value)
			lines[p.String()] = node.Content[i].Line
			index(node.Content[i+1], p, lines)
		}
	case yaml.SequenceNode:
		for i, item := range node.Content {
			p := append(path[:len(path):len(path)], fmt.Sprint(i))
			lines[p.String()] = item.Line
			index(item, p, lines)
		}
	case yaml.AliasNode:
		index(node.Alias, path, lines)
	}
}

// jsonValues gives a decoded document the types a JSON decoder gives (as the
// rendered manifest has them): map[string]any, []any, float64 for numbers.
func jsonValues(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			v[k] = jsonValues(item)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, item := range v {
			m[fmt.Sprint(k)] = jsonValues(item)
		}
		return m
	case []any:
		for i, item := range v {
			v[i] = jsonValues(item)
		}
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	}
	return v
}
