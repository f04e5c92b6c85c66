// Package diag is the generator's one kind of diagnostic: something wrong
// with the settings (an error) or risky in them (a warning), at a key path,
// placed at the file, line and column the user wrote it. Loading, the schema's
// validation, the chart's checks and the warnings all report diagnostics.
package diag

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

// Severity says whether a diagnostic stops the render.
type Severity int

const (
	// Error: the settings are invalid, and nothing is rendered.
	Error Severity = iota
	// Warning: advice on valid settings; the manifest is rendered all the
	// same, unless the user asks for --strict.
	Warning
	// Unchecked: a question about the settings that the cluster would not
	// answer (generator check).
	Unchecked
	// Denied: a question about the settings that the user's role keeps
	// from being asked (generator check), such as an object the user may
	// not read; Needs is the right that would let it.
	Denied
)

// Diagnostic is one thing wrong with, or risky in, the settings: the key path
// and a message that says what is wrong and how to fix it; once placed in the
// input, the file (or --set argument), line and column it came from.
type Diagnostic struct {
	Severity Severity
	Path     Path
	Message  string
	// AtKey places the diagnostic on the key itself rather than on its value,
	// for keys that should not be there at all.
	AtKey bool
	// Expected, for a value of the wrong type, is the types the key takes,
	// as JSON Schema names them ("string", "integer", ...), so that the fix
	// can be given for where the value came from, such as --set.
	Expected []string

	// Needs, for Denied, is the right the question takes: "get
	// priorityclasses.scheduling.k8s.io".
	Needs string

	Source string // file name, "<stdin>", or "--set key=value"; "" until placed
	Line   int    // 1-based; 0 when the source has no lines (--set)
	Column int
}

// String writes the diagnostic as the command line prints it:
// file:line:col: [warning: ]path: message.
func (d Diagnostic) String() string {
	var where string
	if d.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", d.Source, d.Line, d.Column)
	} else {
		where = d.Source
	}
	switch d.Severity {
	case Warning:
		where += ": warning"
	case Unchecked, Denied:
		where += ": could not check"
	}
	message := d.Message
	if d.Severity == Denied {
		message += " (needs " + d.Needs + ")"
	}
	if len(d.Path) == 0 {
		return where + ": " + message
	}
	return where + ": " + d.Path.String() + ": " + message
}

// List is the error returned for invalid settings: every diagnostic found, in
// input order.
type List []Diagnostic

func (l List) Error() string {
	lines := make([]string, len(l))
	for i, d := range l {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}
