package main

import (
	"bytes"
	"encoding/json"
	"strings"
)

// validatorSchema writes the settings schema as the generator's validator
// compiles it: the same document, on one line, without the keywords that only
// people read (title, description, examples, default, $comment and the x-
// keywords). gojsonschema reads none of them, and decoding the schema's JSON
// is a third of compiling it. The explanations take their words from the
// schema itself.
func validatorSchema(schemaJSON []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(schemaJSON))
	dec.UseNumber() // numbers as written
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	withoutAnnotations(doc)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(doc)
	return b.Bytes(), err
}

// withoutAnnotations removes the annotations from a schema and from every
// schema inside it, leaving the values of the other keywords (enum, const,
// required, ...) as they are.
func withoutAnnotations(s map[string]any) {
	for key, value := range s {
		switch key {
		case "title", "description", "examples", "default", "$comment":
			delete(s, key)
			continue
		}
		if strings.HasPrefix(key, "x-") {
			delete(s, key)
			continue
		}
		switch key {
		case "properties", "patternProperties", "definitions", "dependencies":
			for _, sub := range asMap(value) {
				schemas(sub)
			}
		case "items", "additionalItems", "additionalProperties", "propertyNames", "contains", "not", "if", "then", "else", "allOf", "anyOf", "oneOf":
			schemas(value)
		}
	}
}

// schemas removes the annotations from a schema or a list of schemas; other
// values (a boolean schema, the list of names of a dependency) have none.
func schemas(value any) {
	switch v := value.(type) {
	case map[string]any:
		withoutAnnotations(v)
	case []any:
		for _, item := range v {
			schemas(item)
		}
	}
}

func asMap(value any) map[string]any {
	m, _ := value.(map[string]any)
	return m
}
