package settings

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Path is a key path into the settings: map keys, and list indices written as
// decimal numbers.
type Path []string

// String writes the path the way users write it: environmentVariables[2].name,
// and a map key that holds more than letters, digits, '_', '-' and '/' (a label
// key such as nvidia.com/gpu.product) in quotes:
// nodeSelector["nvidia.com/gpu.product"].
func (p Path) String() string {
	var b strings.Builder
	for i, seg := range p {
		if _, err := strconv.Atoi(seg); err == nil && i > 0 {
			b.WriteString("[" + seg + "]")
			continue
		}
		if !plainKey(seg) {
			b.WriteString("[" + strconv.Quote(seg) + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// plainKey tells whether a key can be written without quotes in a path.
func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-/", r) {
			return false
		}
	}
	return true
}

// ParsePath reads a path written as Path.String writes it.
func ParsePath(s string) Path {
	var p Path
	for s != "" {
		switch {
		case strings.HasPrefix(s, "["):
			s = s[1:]
			if quoted, err := strconv.QuotedPrefix(s); err == nil {
				key, _ := strconv.Unquote(quoted)
				p = append(p, key)
				s = s[len(quoted):]
			} else {
				index, _, _ := strings.Cut(s, "]")
				p = append(p, index)
				s = s[len(index):]
			}
			s = strings.TrimPrefix(s, "]")
		case strings.HasPrefix(s, "."):
			s = s[1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			p = append(p, s[:end])
			s = s[end:]
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
