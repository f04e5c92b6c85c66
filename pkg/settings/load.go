// Package settings reads a user's settings files, merges them the way Helm
// merges values files, validates the result against the settings schema and
// places every problem at its file, line and column.
package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"
)

// Options says where the settings come from. Files are merged left to right,
// then Sets and then SetStrings are applied in order, as helm does with -f,
// --set and --set-string.
type Options struct {
	Files      []string  // paths; "-" reads Stdin
	Sets       []string  // key=value, Helm's --set syntax
	SetStrings []string  // key=value, Helm's --set-string syntax
	Stdin      io.Reader // read for "-"
}

// UsageError means the settings could not be read at all: a missing file, a
// malformed --set. It is the command line that needs fixing.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Input is the user's settings: the merged values and where each came from.
type Input struct {
	// Values are the merged settings, before the chart's defaults apply.
	// Numbers are float64 (int64 from --set), exactly as Helm reads them.
	Values  map[string]any
	sources []source
}

// source is one file or --set argument. Exactly one of doc and values is set.
type source struct {
	name   string
	doc    *yaml.Node     // the parsed file, with positions
	values map[string]any // what one --set argument sets
}

// Load reads and merges the settings. Unreadable files and malformed --set
// arguments give a UsageError; files that are not valid settings YAML give
// Problems, all of them at once.
func Load(opts Options) (*Input, error) {
	in := &Input{Values: map[string]any{}}
	var problems Problems
	for _, file := range opts.Files {
		name, data, err := readFile(file, opts.Stdin)
		if err != nil {
			return nil, UsageError{err}
		}
		doc, values, fileProblems := parse(name, data)
		if len(fileProblems) > 0 {
			problems = append(problems, fileProblems...)
			continue
		}
		in.sources = append(in.sources, source{name: name, doc: doc})
		in.Values = mergeMaps(in.Values, values)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	for _, set := range []struct {
		flag string
		args []string
		into func(string, map[string]any) error
	}{
		{"--set", opts.Sets, strvals.ParseInto},
		{"--set-string", opts.SetStrings, strvals.ParseIntoString},
	} {
		for _, arg := range set.args {
			own := map[string]any{}
			if err := set.into(arg, own); err != nil {
				return nil, UsageError{fmt.Errorf("%s %s: %w", set.flag, arg, err)}
			}
			if err := set.into(arg, in.Values); err != nil {
				return nil, UsageError{fmt.Errorf("%s %s: %w", set.flag, arg, err)}
			}
			in.sources = append(in.sources, source{name: set.flag + " " + arg, values: own})
		}
	}
	return in, nil
}

func readFile(file string, stdin io.Reader) (name string, data []byte, err error) {
	if file == "-" {
		if stdin == nil {
			return "<stdin>", nil, errors.New("-f -: no standard input to read")
		}
		data, err = io.ReadAll(stdin)
		return "<stdin>", data, err
	}
	data, err = os.ReadFile(file)
	if err != nil {
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			err = fmt.Errorf("cannot read settings file %s: %w", file, pathErr.Err)
		}
	}
	return file, data, err
}

// parse reads one settings file twice: with positions, to find duplicate keys
// and to place problems later, and as Helm reads values files
// (chartutil.ReadValues), so that the values are exactly what helm template
// would see.
func parse(name string, data []byte) (*yaml.Node, map[string]any, Problems) {
	at := func(line, col int, msg string) Problems {
		return Problems{{Source: name, Line: line, Column: col, Message: msg}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		line, msg := syntaxError(err, data)
		return nil, nil, at(line, 1, msg)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err != io.EOF {
		line := 1
		if err == nil {
			line = next.Line
		}
		return nil, nil, at(line, 1, "a settings file holds one YAML document, and this is a second one; put each document in a file of its own and pass each with -f")
	}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode && !(root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
			return nil, nil, at(root.Line, root.Column, fmt.Sprintf("the settings must be a mapping of keys to values, such as \"jobName: my-job\", not %s", describeNode(root)))
		}
	}
	if problems := duplicateKeys(name, &doc, nil); len(problems) > 0 {
		return nil, nil, problems
	}
	values := map[string]any{}
	if err := sigsyaml.Unmarshal(data, &values); err != nil {
		return nil, nil, at(1, 1, "cannot read the settings: "+strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
	}
	return &doc, values, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML parser error into a line number and a message.
func syntaxError(err error, data []byte) (int, string) {
	msg := err.Error()
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return 1, "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")
	}
	line, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(data), "\n")
	if line >= 1 && line <= len(lines) {
		indent := lines[line-1][:len(lines[line-1])-len(strings.TrimLeft(lines[line-1], " \t"))]
		if strings.Contains(indent, "\t") {
			return line, "invalid YAML: this line is indented with a tab, which YAML does not allow; indent with spaces"
		}
	}
	return line, "invalid YAML: " + m[2] + "; check the indentation and quoting of this line and the lines around it"
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	default:
		return "this"
	}
}

// duplicateKeys finds every key that appears twice in one mapping: YAML
// forbids it, and Helm would silently keep the last one.
func duplicateKeys(name string, n *yaml.Node, path Path) Problems {
	var problems Problems
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			problems = append(problems, duplicateKeys(name, c, path)...)
		}
	case yaml.MappingNode:
		first := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			keyPath := append(path[:len(path):len(path)], key.Value)
			if prev, ok := first[key.Value]; ok {
				problems = append(problems, Problem{
					Source: name, Line: key.Line, Column: key.Column, Path: keyPath,
					Message: fmt.Sprintf("duplicate key, first set on line %d; keep only one of the two", prev.Line),
				})
				continue
			}
			first[key.Value] = key
			problems = append(problems, duplicateKeys(name, value, keyPath)...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			problems = append(problems, duplicateKeys(name, c, append(path[:len(path):len(path)], strconv.Itoa(i)))...)
		}
	}
	return problems
}

// mergeMaps merges b into a copy of a the way helm merges values files: maps
// merge key by key, anything else in b replaces what a has.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
