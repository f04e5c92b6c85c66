// Command generate writes the files made from the settings schema, so that
// they never disagree with it: go generate ./schema (make generate) runs it
// from the schema's folder. A test fails when one of them is stale.
//
//	chart/values.schema.json  an exact copy, for helm template's validation
//	schema/editor.schema.json the schema of a settings file as written, for editors
//	chart/values.yaml         every setting with its description and default
//	docs/settings.md          the settings reference
//	chart/README.md           chart/README.md.gotmpl with the reference
//	pkg/validate/validator.schema.json
//	                          the schema without its annotations, which the
//	                          generator's validator compiles
//	schema/index.json         every key with its types and defaults, which a
//	                          profile reads
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/torchwrap/generator/schema"
)

func main() {
	root := flag.String("root", "..", "the repository's root folder")
	flag.Parse()
	files, err := generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(*root, name), files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "generate:", err)
			os.Exit(1)
		}
	}
}

// generate makes the files, by their paths from the repository's root.
func generate(root string) (map[string][]byte, error) {
	s, err := schema.Model()
	if err != nil {
		return nil, err
	}
	tmpl, err := os.ReadFile(filepath.Join(root, "chart", "README.md.gotmpl"))
	if err != nil {
		return nil, err
	}
	readme, err := chartReadme(s, tmpl)
	if err != nil {
		return nil, err
	}
	values := valuesFile(s)
	editor, err := editorSchema(schema.JSON, values)
	if err != nil {
		return nil, err
	}
	validator, err := validatorSchema(schema.JSON)
	if err != nil {
		return nil, err
	}
	kindDefaults, err := kindDefaultsTemplate(s)
	if err != nil {
		return nil, err
	}
	index, err := schema.IndexOf(s.Keys())
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		filepath.Join("chart", "values.schema.json"):              schema.JSON,
		filepath.Join("schema", "editor.schema.json"):             editor,
		filepath.Join("chart", "values.yaml"):                     values,
		filepath.Join("chart", "templates", "_kinddefaults.tpl"):  kindDefaults,
		filepath.Join("docs", "settings.md"):                      reference(s),
		filepath.Join("chart", "README.md"):                       readme,
		filepath.Join("pkg", "validate", "validator.schema.json"): validator,
		filepath.Join("schema", "index.json"):                     index,
	}, nil
}
