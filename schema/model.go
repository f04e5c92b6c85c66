package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/torchwrap/generator/pkg/diag"
)

// Schema is one node of the settings schema (settings.schema.json), with the
// keywords the generator reads besides validating: to explain a problem, to
// write values.yaml and the settings reference.
type Schema struct {
	Ref         string          `json:"$ref"`
	Type        TypeList        `json:"type"`
	Description string          `json:"description"`
	Section     string          `json:"x-section"`
	Error       string          `json:"x-error"`
	Default     json.RawMessage `json:"default"`
	// KindDefaults are the defaults that differ by jobKind, over Default.
	KindDefaults map[string]json.RawMessage `json:"x-kind-defaults"`
	Examples     []json.RawMessage          `json:"examples"`
	Enum         []any                      `json:"enum"`
	Pattern      string                     `json:"pattern"`
	Minimum      *float64                   `json:"minimum"`
	Maximum      *float64                   `json:"maximum"`
	MaxLength    *int                       `json:"maxLength"`
	MinItems     *int                       `json:"minItems"`
	Required     []string                   `json:"required"`
	Properties   Properties                 `json:"properties"`
	Items        *Schema                    `json:"items"`
	// AdditionalProperties is the schema of the values of a map, or nil.
	AdditionalProperties *Schema `json:"-"`
	// PropertyNames is the schema of the keys of a map, or nil.
	PropertyNames *Schema   `json:"propertyNames"`
	AnyOf         []*Schema `json:"anyOf"`
	OneOf         []*Schema `json:"oneOf"`
	AllOf         []*Schema `json:"allOf"`
	Not           *Schema   `json:"not"`
	// KeysHint, at the root, says how a user finds the keys of a document
	// of this schema, where an unknown key is not a typo of one.
	KeysHint    string             `json:"x-keys-hint"`
	Then        *Schema            `json:"then"`
	Definitions map[string]*Schema `json:"definitions"`

	// root is the document, to resolve $ref against.
	root *Schema
	// names and lowerNames are the property names, for did-you-mean.
	names, lowerNames []string
}

// Property is a named entry of "properties", in the order of the schema file.
type Property struct {
	Name   string
	Schema *Schema
}

// Properties keeps the order in which the schema lists its properties: it is
// the order of values.yaml and of the settings reference.
type Properties []Property

// UnmarshalJSON reads a JSON object and keeps the order of its keys.
func (ps *Properties) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var s Schema
		if err := dec.Decode(&s); err != nil {
			return err
		}
		*ps = append(*ps, Property{Name: tok.(string), Schema: &s})
	}
	return nil
}

// Names are the names of the node's properties, in schema order, and the
// same in lower case, for did-you-mean.
func (s *Schema) Names() (names, lower []string) { return s.names, s.lowerNames }

// Get returns the named property, or nil.
func (ps Properties) Get(name string) *Schema {
	for _, p := range ps {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// TypeList is the "type" keyword: one type name or a list of them.
type TypeList []string

// UnmarshalJSON accepts both forms of "type".
func (t *TypeList) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*t = TypeList{one}
		return nil
	}
	var many []string
	err := json.Unmarshal(data, &many)
	*t = many
	return err
}

// UnmarshalJSON reads a schema node; additionalProperties may be a boolean,
// which says nothing about the values' schema. A node that is a boolean
// (true: anything, false: nothing) reads as an empty node.
func (s *Schema) UnmarshalJSON(data []byte) error {
	if trimmed := bytes.TrimSpace(data); bytes.Equal(trimmed, []byte("true")) || bytes.Equal(trimmed, []byte("false")) {
		*s = Schema{}
		return nil
	}
	type plain Schema
	var node struct {
		plain
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	if err := json.Unmarshal(data, &node); err != nil {
		return err
	}
	*s = Schema(node.plain)
	if bytes.HasPrefix(bytes.TrimSpace(node.AdditionalProperties), []byte("{")) {
		s.AdditionalProperties = &Schema{}
		return json.Unmarshal(node.AdditionalProperties, s.AdditionalProperties)
	}
	return nil
}

// Parse reads a settings schema document.
func Parse(data []byte) (*Schema, error) {
	var root Schema
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	root.link(&root)
	return &root, nil
}

func (s *Schema) link(root *Schema) {
	if s == nil {
		return
	}
	s.root = root
	for _, p := range s.Properties {
		p.Schema.link(root)
		s.names = append(s.names, p.Name)
		s.lowerNames = append(s.lowerNames, strings.ToLower(p.Name))
	}
	s.Items.link(root)
	s.AdditionalProperties.link(root)
	s.PropertyNames.link(root)
	s.Then.link(root)
	s.Not.link(root)
	for _, list := range [][]*Schema{s.AnyOf, s.OneOf, s.AllOf} {
		for _, c := range list {
			c.link(root)
		}
	}
	for _, d := range s.Definitions {
		d.link(root)
	}
}

// Resolved follows $ref, and an anyOf of null and one other schema (the way
// the schema says "this, or nothing") to that other schema.
func (s *Schema) Resolved() *Schema {
	for s != nil {
		switch {
		case s.Ref != "":
			s = s.root.Definitions[strings.TrimPrefix(s.Ref, "#/definitions/")]
		case len(s.AnyOf) > 0:
			var other *Schema
			for _, c := range s.AnyOf {
				if !(len(c.Type) == 1 && c.Type[0] == "null") {
					other = c
				}
			}
			if other == nil {
				return s
			}
			s = other
		default:
			return s
		}
	}
	return nil
}

// Nullable tells whether null is a valid value: the schema's way of saying a
// setting may be left empty.
func (s *Schema) Nullable() bool {
	for _, c := range s.AnyOf {
		if len(c.Type) == 1 && c.Type[0] == "null" {
			return true
		}
	}
	for _, t := range s.Resolved().Type {
		if t == "null" {
			return true
		}
	}
	return false
}

// Types lists the JSON types a value may have, null included.
func (s *Schema) Types() []string {
	types := append([]string(nil), s.Resolved().Type...)
	if s.Nullable() && !slices.Contains(types, "null") {
		types = append(types, "null")
	}
	return types
}

// At returns the schema of the value at path, or nil when the schema does not
// describe it.
func (s *Schema) At(path diag.Path) *Schema {
	cur := s
	for _, seg := range path {
		cur = cur.Resolved()
		if cur == nil {
			return nil
		}
		if p := cur.Properties.Get(seg); p != nil {
			cur = p
			continue
		}
		if cur.Items != nil {
			cur = cur.Items
			continue
		}
		if cur.AdditionalProperties != nil {
			cur = cur.AdditionalProperties
			continue
		}
		return nil
	}
	return cur
}

// ErrorText is the x-error of the schema or of the schema it resolves to.
func (s *Schema) ErrorText() string {
	if s == nil {
		return ""
	}
	if s.Error != "" {
		return s.Error
	}
	if r := s.Resolved(); r != nil {
		return r.Error
	}
	return ""
}

// FirstExample is the schema's first example, or its default, as JSON; nil
// when it has neither.
func (s *Schema) FirstExample() json.RawMessage {
	for _, n := range []*Schema{s, s.Resolved()} {
		if len(n.Examples) > 0 {
			return n.Examples[0]
		}
		if n.Default != nil {
			return n.Default
		}
	}
	return nil
}
