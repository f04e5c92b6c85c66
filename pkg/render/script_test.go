package render_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/torchwrap/generator/testdata/cases"
)

// A container's shell script holds no empty line: a setup command written as
// a YAML block (- |) ends in a newline, which must not become one.
func TestScriptsHoldNoEmptyLine(t *testing.T) {
	for _, file := range cases.ValidSettings(t) {
		for _, obj := range cases.Objects(t, cases.Render(t, file)) {
			for _, script := range scripts(obj) {
				assert.NotContains(t, script, "\n\n", "%s: a script holds an empty line:\n%s", file, script)
			}
		}
	}
}

// scripts returns the texts of more than one line in every command and args
// list of a manifest object, at any depth.
func scripts(node any) []string {
	var found []string
	switch n := node.(type) {
	case map[string]any:
		for key, value := range n {
			if list, ok := value.([]any); ok && (key == "command" || key == "args") {
				for _, item := range list {
					if s, ok := item.(string); ok && strings.Contains(s, "\n") {
						found = append(found, s)
					}
				}
				continue
			}
			found = append(found, scripts(value)...)
		}
	case []any:
		for _, item := range n {
			found = append(found, scripts(item)...)
		}
	}
	return found
}
