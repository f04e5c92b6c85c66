package cli

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/torchwrap/generator/schema"
)

//go:embed starter.yaml.tmpl
var starterTemplate string

// starter writes the settings.yaml generator init gives for a job kind: the
// keys a first job needs, set, and common optional ones as commented examples,
// each with the schema's description. schemaURL goes into the modeline that
// lets editors complete and check the keys; file is the name the comments use.
func starter(s *schema.Schema, kind, schemaURL, file string) ([]byte, error) {
	keys := s.Keys()
	describe := func(path string) (string, error) {
		k, ok, _ := keys.Find(path)
		if !ok {
			return "", fmt.Errorf("the schema has no key %s", path)
		}
		var lines []string
		for _, line := range schema.Wrap(k.Description, 78) {
			lines = append(lines, "# "+line)
		}
		return strings.Join(lines, "\n"), nil
	}
	example := func(path string) (string, error) {
		text, err := describe(path)
		if err != nil {
			return "", err
		}
		k, _, _ := keys.Find(path)
		if k.Example == nil {
			return "", fmt.Errorf("the schema has no example of %s", path)
		}
		for _, line := range strings.Split(strings.TrimSuffix(k.InContext(k.Example), "\n"), "\n") {
			text += "\n# " + line
		}
		return text, nil
	}
	t, err := template.New("starter").Option("missingkey=error").
		Funcs(template.FuncMap{"describe": describe, "example": example}).Parse(starterTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = t.Execute(&b, map[string]string{"Kind": kind, "SchemaURL": schemaURL, "File": file})
	return b.Bytes(), err
}
