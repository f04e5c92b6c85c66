package schema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key is one setting as the schema documents it: what generator explain shows
// and the settings reference lists. Fields of objects are keys too, and so are
// the fields of each item of a list, written with [] (environmentVariables[].name).
type Key struct {
	Path        string
	Section     string
	Description string
	Type        string // in words: "integer", "list of strings", "string or null"
	// Types are the JSON types its value may have, null among them when it
	// may be left empty.
	Types    []string
	Required bool // every settings file sets it, or its parent object needs it
	Default  json.RawMessage
	// KindDefaults are the defaults of the job kinds whose default is not
	// Default (a TrainJob's wrapper is none).
	KindDefaults map[string]json.RawMessage
	Enum         []any
	Example      json.RawMessage
	Rules        []string // what a value must be, beyond its type
	Fields       []string // the paths of its own fields, for an object or a list of objects
}

// Keys lists every key the schema describes, in schema order, each followed
// by its fields.
func (s *Schema) Keys() Keys {
	var keys Keys
	var walk func(object *Schema, prefix, section string) []string
	walk = func(object *Schema, prefix, section string) []string {
		var paths []string
		for _, p := range object.Properties {
			node, resolved := p.Schema, p.Schema.Resolved()
			if prefix == "" {
				section = node.Section
			}
			key := Key{
				Path:         prefix + p.Name,
				Section:      section,
				Description:  first(node.Description, resolved.Description),
				Type:         schemaType(node),
				Types:        valueTypes(node),
				Required:     slices.Contains(object.Required, p.Name) && node.Default == nil,
				Default:      firstRaw(node.Default, resolved.Default),
				KindDefaults: node.KindDefaults,
				Example:      firstExample(node, resolved),
				Rules:        s.rules(prefix+p.Name, node),
			}
			for _, v := range resolved.Enum {
				if v != nil {
					key.Enum = append(key.Enum, v)
				}
			}
			keys = append(keys, key)
			i := len(keys) - 1
			switch {
			case len(resolved.Properties) > 0:
				keys[i].Fields = walk(resolved, key.Path+".", section)
			case resolved.Items != nil && len(resolved.Items.Resolved().Properties) > 0:
				keys[i].Fields = walk(resolved.Items.Resolved(), key.Path+"[].", section)
			}
			paths = append(paths, key.Path)
		}
		return paths
	}
	walk(s, "", "")
	return keys
}

// Keys is every key of the schema, in schema order.
type Keys []Key

// Find returns the key a user names, written with or without list brackets
// or indices (environmentVariables.name, environmentVariables[0].name), and
// otherwise the path of the key it most likely means, or "".
func (ks Keys) Find(name string) (key Key, ok bool, suggestion string) {
	for _, k := range ks {
		if k.Path == name {
			return k, true, ""
		}
	}
	var paths, lower []string
	want := bracketless(name)
	for _, k := range ks {
		if bracketless(k.Path) == want {
			return k, true, ""
		}
		paths = append(paths, k.Path)
		lower = append(lower, strings.ToLower(bracketless(k.Path)))
	}
	return Key{}, false, Closest(want, paths, lower)
}

var brackets = regexp.MustCompile(`\[[0-9]*\]`)

func bracketless(path string) string { return brackets.ReplaceAllString(path, "") }

// rules says what a value of the key at path must be beyond its type: its
// range and format, and the rules of the schema's allOf that concern it.
func (s *Schema) rules(path string, node *Schema) []string {
	var rules []string
	r := node.Resolved()
	switch {
	case r.Minimum != nil && r.Maximum != nil:
		rules = append(rules, fmt.Sprintf("From %v to %v.", *r.Minimum, *r.Maximum))
	case r.Minimum != nil:
		rules = append(rules, fmt.Sprintf("At least %v.", *r.Minimum))
	case r.Maximum != nil:
		rules = append(rules, fmt.Sprintf("At most %v.", *r.Maximum))
	}
	// x-error tells what is wrong with a value; the ones that say how to
	// write it ("is not a Go duration: use ...") or what it needs are rules.
	text := node.ErrorText()
	_, how, format := strings.Cut(text, ": ")
	format = format && strings.HasPrefix(text, "is not ")
	switch {
	case format:
		rules = append(rules, sentence(how))
	case strings.HasPrefix(text, "needs "):
		rules = append(rules, sentence(text))
	}
	if r.MaxLength != nil && !format {
		rules = append(rules, fmt.Sprintf("At most %d characters.", *r.MaxLength))
	}
	for _, rule := range s.AllOf {
		if rule.Then != nil && slices.Contains(ruleKeys(rule.Then), path) {
			rules = append(rules, sentence(rule.Error))
		}
	}
	return rules
}

// ruleKeys are the keys that the then part of a rule constrains: the ones it
// requires, and the properties it names, followed down while it names one.
func ruleKeys(then *Schema) []string {
	keys := slices.Clone(then.Required)
	for _, p := range then.Properties {
		path, node := p.Name, p.Schema
		for len(node.Properties) == 1 {
			path += "." + node.Properties[0].Name
			node = node.Properties[0].Schema
		}
		if !slices.Contains(keys, path) {
			keys = append(keys, path)
		}
	}
	return keys
}

// schemaType writes the types a value may have: "integer", "list of strings",
// "string, number or boolean"; null last, when the key may be left empty.
func schemaType(s *Schema) string {
	r := s.Resolved()
	var words []string
	for _, t := range typesOf(r) {
		switch t {
		case "null":
			continue
		case "array":
			words = append(words, "list of "+plural(schemaType(r.Items)))
		case "object":
			if r.AdditionalProperties != nil {
				words = append(words, "map of "+plural(schemaType(r.AdditionalProperties)))
			} else {
				words = append(words, "object")
			}
		default:
			words = append(words, t)
		}
	}
	if s.Nullable() {
		words = append(words, "null")
	}
	if len(words) == 0 {
		return "any value"
	}
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// valueTypes lists the JSON types a value may have, null last when the key
// may be left empty.
func valueTypes(s *Schema) []string {
	types := slices.DeleteFunc(slices.Clone(typesOf(s.Resolved())), func(t string) bool { return t == "null" })
	if s.Nullable() {
		types = append(types, "null")
	}
	return types
}

// typesOf lists the types of a resolved schema node, or of its alternatives.
func typesOf(r *Schema) []string {
	if r == nil {
		return nil
	}
	if len(r.Type) > 0 {
		return r.Type
	}
	var types []string
	for _, alt := range slices.Concat(r.AnyOf, r.OneOf, r.AllOf) {
		for _, t := range typesOf(alt.Resolved()) {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	return types
}

// plural makes the first word of a type plural: "list of strings" becomes
// "lists of strings".
func plural(words string) string {
	first, rest, _ := strings.Cut(words, " ")
	if rest != "" {
		rest = " " + rest
	}
	return first + "s" + rest
}

// sentence starts text with a capital and ends it with a full stop.
func sentence(text string) string {
	r, size := utf8.DecodeRuneInString(text)
	text = string(unicode.ToUpper(r)) + text[size:]
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	return text
}

func first(texts ...string) string {
	for _, t := range texts {
		if t != "" {
			return t
		}
	}
	return ""
}

func firstRaw(values ...json.RawMessage) json.RawMessage {
	for _, v := range values {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstExample(nodes ...*Schema) json.RawMessage {
	for _, n := range nodes {
		if len(n.Examples) > 0 {
			return n.Examples[0]
		}
	}
	return nil
}

// InContext writes value as the YAML a settings file holds for the key: under
// its parents, in a list where the path says [].
func (k Key) InContext(value json.RawMessage) string { return YAMLAt(k.Path, value) }
