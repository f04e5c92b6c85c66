package settings

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/torchwrap/generator/pkg/diag"
)

// Parsed is the Input of one document read with Document.Read, to place
// diagnostics about it in its text.
func Parsed(name string, root *yaml.Node, values map[string]any) *Input {
	return &Input{Values: values, sources: []source{{name: name, doc: root, values: values}}}
}

// Locate places diagnostics in the input, sorted by source and position. A
// diagnostic belongs to the last source that sets its path, the one whose
// value Helm keeps; when no source sets the path itself (a missing key), it
// belongs to where the nearest parent is set.
func (in *Input) Locate(ds []diag.Diagnostic) diag.List {
	placed := make(diag.List, 0, len(ds))
	order := map[string]int{}
	for i, s := range in.sources {
		order[s.name] = i
	}
	for _, d := range ds {
		placed = append(placed, in.locate(d))
	}
	sort.SliceStable(placed, func(i, j int) bool {
		a, b := placed[i], placed[j]
		if order[a.Source] != order[b.Source] {
			return order[a.Source] < order[b.Source]
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Line == 0 {
			// A --set argument has no lines: its problems go by key path,
			// as the validator finds the problems of several keys in no
			// fixed order.
			return a.Path.String() < b.Path.String()
		}
		return a.Column < b.Column
	})
	return placed
}

func (in *Input) locate(d diag.Diagnostic) diag.Diagnostic {
	for depth := len(d.Path); depth >= 1; depth-- {
		prefix := d.Path[:depth]
		for i := len(in.sources) - 1; i >= 0; i-- {
			s := &in.sources[i]
			if s.doc == nil {
				if value, ok := ValueAt(s.values, prefix); ok {
					d.Source = s.name
					if depth == len(d.Path) {
						d.Message += s.setStringFix(d, value)
					}
					return d
				}
				continue
			}
			key, value := s.find(prefix)
			if value == nil {
				continue
			}
			at := value
			if key != nil && (d.AtKey || depth < len(d.Path) || isBlock(value)) {
				at = key
			}
			d.Source, d.Line, d.Column = s.name, at.Line, at.Column
			if s.defaults && depth == len(d.Path) {
				d.Message += fmt.Sprintf("; it is a default of %s: set %s to null in your settings to do without it", s.name, d.Path)
			}
			return d
		}
	}
	// Nothing sets any part of the path: a required key is missing. It belongs
	// in the last file given.
	d.Source = "settings"
	for i := len(in.sources) - 1; i >= 0; i-- {
		if in.sources[i].doc != nil && !in.sources[i].layer {
			d.Source, d.Line, d.Column = in.sources[i].name, 1, 1
			break
		}
	}
	return d
}

// isBlock reports a list or mapping written over lines of its own, whose
// problems belong on the line of its key rather than on its first entry.
func isBlock(n *yaml.Node) bool {
	n = resolve(n)
	return (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle == 0
}

// located is a key and value node of a parsed file.
type located struct{ key, value *yaml.Node }

// find returns the key and value nodes at path in the source's file, or nil
// when the file does not set the path. Paths written out in the file are
// looked up in an index made on first use (a file may hold very many keys);
// others, through aliases and merge keys (<<), are searched for.
func (s *source) find(path diag.Path) (key, value *yaml.Node) {
	if s.index == nil {
		s.index = map[string]located{}
		indexNodes(s.index, resolve(s.doc), nil, nil)
	}
	if l, ok := s.index[path.String()]; ok {
		return l.key, l.value
	}
	return find(s.doc, path)
}

// indexNodes records the nodes of a file by path, without following aliases.
func indexNodes(index map[string]located, n, key *yaml.Node, path diag.Path) {
	index[path.String()] = located{key, n}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			indexNodes(index, n.Content[i+1], n.Content[i], append(path[:len(path):len(path)], n.Content[i].Value))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			indexNodes(index, c, nil, append(path[:len(path):len(path)], strconv.Itoa(i)))
		}
	}
}

// find returns the key and value nodes at path in a parsed file, or nil when
// the file does not set the path. Aliases and merge keys (<<) are followed.
func find(doc *yaml.Node, path diag.Path) (key, value *yaml.Node) {
	value = doc
	for _, seg := range path {
		n := resolve(value)
		switch n.Kind {
		case yaml.MappingNode:
			key, value = lookupKey(n, seg)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil, nil
			}
			key, value = nil, n.Content[i]
		default:
			return nil, nil
		}
		if value == nil {
			return nil, nil
		}
	}
	return key, value
}

func resolve(n *yaml.Node) *yaml.Node {
	for {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		case n.Kind == yaml.AliasNode && n.Alias != nil:
			n = n.Alias
		default:
			return n
		}
	}
}

func lookupKey(m *yaml.Node, name string) (key, value *yaml.Node) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Value == name {
			return k, v
		}
		if k.Tag == "!!merge" {
			merges = append(merges, v)
		}
	}
	for _, merge := range merges {
		merge = resolve(merge)
		candidates := []*yaml.Node{merge}
		if merge.Kind == yaml.SequenceNode {
			candidates = merge.Content
		}
		for _, c := range candidates {
			if c = resolve(c); c.Kind == yaml.MappingNode {
				if k, v := lookupKey(c, name); v != nil {
					return k, v
				}
			}
		}
	}
	return nil, nil
}

// ValueAt returns the value at path in values (map keys, and list indices),
// and whether there is one.
func ValueAt(values map[string]any, path diag.Path) (any, bool) {
	var cur any = values
	for _, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// setStringFix is the fix for a --set value that --set read as a number or
// a boolean, where the key of d takes text: --set-string, with the value as
// the argument wrote it. It is "" for any other diagnostic.
func (s *source) setStringFix(d diag.Diagnostic, value any) string {
	var kind string
	switch value.(type) {
	case bool:
		kind = "a boolean"
	case int64:
		kind = "a number"
	}
	if s.set != "--set" || kind == "" || !slices.Contains(d.Expected, "string") {
		return ""
	}
	texts, err := strvals.ParseString(s.arg)
	if err != nil {
		return ""
	}
	text, _ := ValueAt(texts, d.Path)
	return fmt.Sprintf("; --set reads %s as %s: for text, use --set-string %s=%s", text, kind, setKey(d.Path), text)
}

// setKey writes a key path as --set writes it: a.b[0].c, with the dots
// inside a key escaped.
func setKey(path diag.Path) string {
	var b strings.Builder
	for i, seg := range path {
		if _, err := strconv.Atoi(seg); err == nil && i > 0 {
			b.WriteString("[" + seg + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.ReplaceAll(seg, ".", `\.`))
	}
	return b.String()
}
