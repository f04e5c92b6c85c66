package settings

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is a key path into the settings: map keys, and list indices written as
// decimal numbers.
type Path []string

// String writes the path the way users write it: environmentVariables[2].name.
func (p Path) String() string {
	var b strings.Builder
	for i, seg := range p {
		if _, err := strconv.Atoi(seg); err == nil && i > 0 {
			b.WriteString("[" + seg + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// ParsePath reads a path written as Path.String writes it.
func ParsePath(s string) Path {
	var p Path
	for _, part := range strings.Split(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			p = append(p, name)
		}
		for rest != "" {
			index, after, _ := strings.Cut(rest, "]")
			p = append(p, index)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return p
}

// Issue is one thing wrong with the settings, before it is given a place in a
// file: the key path and a message that says what is wrong and how to fix it.
type Issue struct {
	Path    Path
	Message string
	// AtKey places the issue on the key itself rather than on its value, for
	// keys that should not be there at all.
	AtKey bool
}

// Problem is an Issue placed in the input: a file and position, or the --set
// argument it came from.
type Problem struct {
	Source  string // file name, "<stdin>", or "--set key=value"
	Line    int    // 1-based; 0 when the source has no lines (--set)
	Column  int
	Path    Path
	Message string
	// Warning marks advice on a valid setting rather than an error.
	Warning bool
}

func (p Problem) String() string {
	var where string
	if p.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", p.Source, p.Line, p.Column)
	} else {
		where = p.Source
	}
	if p.Warning {
		where += ": warning"
	}
	if len(p.Path) == 0 {
		return where + ": " + p.Message
	}
	return where + ": " + p.Path.String() + ": " + p.Message
}

// Problems is the error returned for invalid settings: every problem found,
// in input order.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
