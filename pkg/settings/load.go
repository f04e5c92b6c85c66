// Package settings reads a user's settings files and --set arguments, merges
// them the way Helm merges values files, and places every diagnostic about
// them at the file, line and column (or the --set argument) it concerns.
package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/diag"
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

// MaxFileSize is the largest settings file read: real ones are a few KiB, and
// the cap keeps memory bounded whatever file is given.
const MaxFileSize = 1 << 20

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

// source is one file, layer or --set argument.
type source struct {
	name string
	// doc is the parsed file or layer, with positions; nil for --set.
	doc *yaml.Node
	// values are what the source sets: a file's or layer's values, or
	// what one --set argument sets alone.
	values map[string]any
	// layer marks a Layer, which no missing key is placed in; defaults, a
	// Layer of defaults.
	layer, defaults bool
	// set is the argument of --set or --set-string, and into how that
	// flag applies it to the values merged before it.
	set  setFlag
	arg  string
	into func(string, map[string]any) error
	// index is the file's nodes by path, made on first use.
	index map[string]located
}

// setFlag names the flag of a source given on the command line: "" for a
// file or a layer.
type setFlag string

// Layer is settings from elsewhere than the user's files and flags, which
// the user's settings go over, such as the defaults of a profile: a YAML
// mapping with the positions of the text it was read from, and its values as
// Helm reads that text.
type Layer struct {
	Name   string // how messages name its source: a file, or a ConfigMap
	Node   *yaml.Node
	Values map[string]any
	// Defaults: its values are defaults, which a user may remove with a
	// null; a diagnostic placed in it says how.
	Defaults bool
}

// Load reads and merges the settings. Unreadable files and malformed --set
// arguments give a UsageError; files that are not valid settings YAML give a
// diag.List, every problem of every file at once.
func Load(opts Options) (*Input, error) {
	in := &Input{}
	var problems diag.List
	for _, file := range opts.Files {
		name, data, err := SettingsFile.ReadFile(file, opts.Stdin)
		if err != nil {
			return nil, UsageError{err}
		}
		doc, values, fileProblems := SettingsFile.Read(name, data)
		if len(fileProblems) > 0 {
			problems = append(problems, fileProblems...)
			continue
		}
		in.sources = append(in.sources, source{name: name, doc: doc, values: values})
	}
	if len(problems) > 0 {
		return nil, problems
	}
	for _, set := range []struct {
		flag setFlag
		args []string
		into func(string, map[string]any) error
	}{
		{"--set", opts.Sets, strvals.ParseInto},
		{"--set-string", opts.SetStrings, strvals.ParseIntoString},
	} {
		for _, arg := range set.args {
			own := map[string]any{}
			err := set.into(arg, own)
			if err == nil {
				err = strayKey(arg, own)
			}
			if err != nil {
				return nil, set.flag.error(arg, err)
			}
			in.sources = append(in.sources, source{name: string(set.flag) + " " + arg, values: own, set: set.flag, arg: arg, into: set.into})
		}
	}
	return in, in.merge()
}

// Over is the same settings over layers: their values first, in order, then
// the files and --set arguments as Load merged them.
func (in *Input) Over(layers []Layer) (*Input, error) {
	over := &Input{}
	for _, l := range layers {
		over.sources = append(over.sources, source{name: l.Name, doc: l.Node, values: l.Values, layer: true, defaults: l.Defaults})
	}
	for _, s := range in.sources {
		if !s.layer {
			over.sources = append(over.sources, s)
		}
	}
	return over, over.merge()
}

// merge sets Values from the sources, as helm merges them: the files (and
// layers) left to right, then each --set argument applied to the result.
func (in *Input) merge() error {
	in.Values = map[string]any{}
	for _, s := range in.sources {
		if s.set == "" {
			in.Values = mergeMaps(in.Values, s.values)
		} else if err := s.into(s.arg, in.Values); err != nil {
			return s.set.error(s.arg, err)
		}
	}
	return nil
}

// error is the UsageError of a --set or --set-string argument that cannot be
// read or applied.
func (f setFlag) error(arg string, err error) error {
	if strings.Contains(arg, ",") {
		err = fmt.Errorf(`%w; commas separate the settings of one %s: write a comma inside a value as \,`, err, f)
	}
	return UsageError{fmt.Errorf("%s %s: %w", f, arg, err)}
}

// strayKey finds, in one --set argument and what it sets, a key that no one
// means to write: an empty one (--set =3, which Helm's parser drops without
// a word), or one that begins with "-", which is an option of a value cut
// off at a comma (--set mainProgram=train.py --lr=1,--wd=2 sets the key
// "--wd"). No setting's name is either.
func strayKey(arg string, values map[string]any) error {
	if slices.ContainsFunc(settingsOf(arg), func(s string) bool { return s == "" || s[0] == '=' }) {
		return errors.New("a key is empty; write key=value, as in --set numPods=2")
	}
	for key := range values {
		if strings.HasPrefix(key, "-") {
			return fmt.Errorf("%q is not a key but part of a value", key)
		}
	}
	return nil
}

// settingsOf splits a --set argument at the commas that separate its
// settings: not an escaped one (\,), nor one inside a list's braces.
func settingsOf(arg string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(arg); i++ {
		switch arg[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, arg[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, arg[start:])
}

// ReadFile reads a file of this kind, or standard input for "-", and no more
// than MaxFileSize+1 bytes of it: enough to tell that it is too big.
func (k Document) ReadFile(file string, stdin io.Reader) (name string, data []byte, err error) {
	if file == "-" {
		if stdin == nil {
			return "<stdin>", nil, fmt.Errorf("%s -: no standard input to read", k.Flag)
		}
		data, err = io.ReadAll(io.LimitReader(stdin, MaxFileSize+1))
		return "<stdin>", data, err
	}
	f, err := os.Open(file)
	if err == nil {
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	}
	if err != nil {
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			err = fmt.Errorf("cannot read %s file %s: %w", k.Noun, file, pathErr.Err)
		}
	}
	return file, data, err
}

// Document is a kind of YAML file the generator reads with positions: what
// its messages call it, the flag that names such a file, and the first line
// of one.
type Document struct {
	Noun, Flag, Example string
}

// SettingsFile is a settings file.
var SettingsFile = Document{Noun: "settings", Flag: "-f", Example: "jobName: my-job"}

// Read reads a file of this kind: its text checked (checkText), then parsed
// with positions and as Helm reads values (parse).
func (k Document) Read(name string, data []byte) (*yaml.Node, map[string]any, diag.List) {
	if problems := k.checkText(name, data); len(problems) > 0 {
		return nil, nil, problems
	}
	return k.parse(name, data)
}

// checkText refuses what cannot be such a file before any YAML parser sees
// it: too big, binary, or not UTF-8.
func (k Document) checkText(name string, data []byte) diag.List {
	if len(data) > MaxFileSize {
		return diag.List{{Source: name, Message: fmt.Sprintf("the file is larger than %d MiB, and %s files are a few KiB of YAML; is this the right file?", MaxFileSize>>20, k.Noun)}}
	}
	at := func(offset int, what string) diag.List {
		line := 1 + bytes.Count(data[:offset], []byte("\n"))
		col := 1 + utf8.RuneCount(data[bytes.LastIndexByte(data[:offset], '\n')+1:offset])
		return diag.List{{Source: name, Line: line, Column: col, Message: what + "; " + k.Noun + " files are YAML text: is this the right file?"}}
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return at(i, "the file holds binary data (a NUL byte)")
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return at(i, "the file is not UTF-8 text (an invalid byte)")
		}
		if !Printable(r) {
			p := at(i, "")
			p[0].Message = fmt.Sprintf("invalid YAML: the control character U+%04X is not allowed in YAML text; remove it, or write it as the escape \\u%04X inside double quotes", r, r)
			return p
		}
		i += size
	}
	return nil
}

// Printable tells whether YAML allows r in a file: tab, line ends, and
// everything but the C0 and C1 control characters and U+FFFE, U+FFFF.
func Printable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		return true
	case r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0xfffe || r == 0xffff:
		return false
	}
	return true
}

// parse reads one file twice: with positions, to find duplicate keys and to
// place problems later, and as Helm reads values files (chartutil.ReadValues),
// so that the values are exactly what helm template would see.
func (k Document) parse(name string, data []byte) (*yaml.Node, map[string]any, diag.List) {
	at := func(line, col int, msg string) diag.List {
		return diag.List{{Source: name, Line: line, Column: col, Message: msg}}
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
		return nil, nil, at(line, 1, fmt.Sprintf("a %s file holds one YAML document, and this is a second one; put each document in a file of its own and pass each with %s", k.Noun, k.Flag))
	}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode && !(root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
			return nil, nil, at(root.Line, root.Column, fmt.Sprintf("the %s must be a mapping of keys to values, such as %q, not %s", k.Noun, k.Example, describeNode(root)))
		}
	}
	if deep := tooDeep(&doc, 0); deep != nil {
		return nil, nil, at(deep.Line, deep.Column, fmt.Sprintf("invalid %s: lists or mappings are nested more than %d deep here, and %s are a few levels deep; is this the right file?", k.Noun, MaxDepth, k.Noun))
	}
	if problems := duplicateKeys(name, &doc, nil); len(problems) > 0 {
		return nil, nil, problems
	}
	values := map[string]any{}
	if err := sigsyaml.Unmarshal(data, &values); err != nil {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		if strings.Contains(msg, "excessive aliasing") {
			msg = "the YAML aliases (*name) in this file expand too many times, as an alias bomb does; write the values out, or use fewer aliases"
		}
		return nil, nil, at(1, 1, "cannot read the "+k.Noun+": "+msg)
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
	if strings.HasPrefix(m[2], "exceeded max depth") {
		return line, "invalid YAML: lists or mappings are nested more than 10000 deep here, and settings are a few levels deep; is this the right file?"
	}
	lines := strings.Split(string(data), "\n")
	if line >= 1 && line <= len(lines) {
		indent := lines[line-1][:len(lines[line-1])-len(strings.TrimLeft(lines[line-1], " \t"))]
		if strings.Contains(indent, "\t") {
			return line, "invalid YAML: this line is indented with a tab, which YAML does not allow; indent with spaces"
		}
	}
	if strings.HasPrefix(m[2], "mapping values are not allowed") && line >= 1 && line <= len(lines) {
		if fix := quoteValue(lines[line-1]); fix != "" {
			return line, `invalid YAML: the value holds ": ", which YAML reads as the start of another key; put the value in quotes: ` + fix
		}
	}
	return line, "invalid YAML: " + m[2] + "; check the indentation and quoting of this line and the lines around it"
}

var keyAndValue = regexp.MustCompile(`^\s*(-\s+)?([A-Za-z0-9_.-]+):\s+([^\s'"\[{|>&*!#].*?)(\s+#.*)?$`)

// quoteValue rewrites a line such as `mainProgram: train.py --note: fast`,
// whose value YAML cannot read because of the ": " in it, with the value in
// quotes; "" when the line is not of that form.
func quoteValue(text string) string {
	m := keyAndValue.FindStringSubmatch(text)
	if m == nil || !strings.Contains(m[3], ": ") {
		return ""
	}
	return m[2] + ": " + quote(m[3])
}

// quote writes a YAML scalar in quotes: single ones when it holds double
// quotes and no single one, so that it reads as written.
func quote(value string) string {
	if strings.Contains(value, `"`) && !strings.Contains(value, "'") {
		return "'" + value + "'"
	}
	return strconv.Quote(value)
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

// MaxDepth is how deep lists and mappings may nest in a settings file. The
// deepest setting is 6 levels down; YAML parsers allow 10000, and work that
// grows with the square of the depth there.
const MaxDepth = 32

// tooDeep returns the first node nested deeper than MaxDepth, or nil. Aliases
// are not followed: the value reader bounds what they expand to.
func tooDeep(n *yaml.Node, depth int) *yaml.Node {
	if depth > MaxDepth {
		return n
	}
	for _, c := range n.Content {
		if deep := tooDeep(c, depth+1); deep != nil {
			return deep
		}
	}
	return nil
}

// duplicateKeys finds every key that appears twice in one mapping: YAML
// forbids it, and Helm would silently keep the last one.
func duplicateKeys(name string, n *yaml.Node, path diag.Path) diag.List {
	var problems diag.List
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
				problems = append(problems, diag.Diagnostic{
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
