package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/xeipuuv/gojsonschema"
	sigsyaml "sigs.k8s.io/yaml"
)

// editorComment opens the editor schema, to say what it is.
const editorComment = "Generated from settings.schema.json by go generate ./schema: edit that file, not this one. " +
	"This is the schema of a settings file as its user writes it, for editors (generator schema prints it): " +
	"a key with a default may be left out, and a key set to null takes no default. " +
	"settings.schema.json is the schema of the chart's values, which Helm checks after it has merged the file over the chart's values.yaml."

// editorSchema makes the schema of a settings file as its user writes it,
// from source, the schema of the chart's values, which Helm checks after
// merging the file over values, the chart's values.yaml. The merge changes
// the file's top-level keys only (values.yaml holds no nested default):
//
//   - a key the file leaves out takes its value in values.yaml: its default,
//     or null;
//   - a key the file sets to null is removed (Helm's coalescing), and takes
//     no default;
//   - a key values.yaml does not hold (jobName, containerImage) stays as the
//     file writes it.
//
// So each part of the schema that checks the whole file (the root, and the
// allOf, anyOf, oneOf, not, if, then and else under it, at any depth) is
// rewritten to give a file the verdict it gives the merged values. For each
// key that values.yaml holds, with its value there and its property schema
// in that part (anything, if the part has none):
//
//   - the key is required when the property schema refuses the value in
//     values.yaml (the file must then set another), and only then: an `if`
//     on jobKind DeepSpeedJob requires jobKind, since the default PyTorchJob
//     is not DeepSpeedJob, while the root no longer requires numPods;
//   - null is accepted when the part does not require the key, and refused
//     when it does: the merged values lack the key then.
func editorSchema(source, values []byte) ([]byte, error) {
	doc, err := decodeJSON(json.NewDecoder(bytes.NewReader(source)))
	if err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	root, ok := doc.(*object)
	if !ok {
		return nil, fmt.Errorf("settings schema: not an object")
	}
	e := editor{defaults: map[string]any{}}
	if err := sigsyaml.Unmarshal(values, &e.defaults); err != nil { // as Helm reads values.yaml
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	e.definitions, _ = root.get("definitions")
	properties, _ := root.get("properties")
	props, ok := properties.(*object)
	if !ok {
		return nil, fmt.Errorf("settings schema: no properties")
	}
	for _, p := range props.members {
		if _, ok := e.defaults[p.key]; ok {
			e.keys = append(e.keys, p.key)
		}
	}
	if err := e.rewrite(root, "#"); err != nil {
		return nil, err
	}
	root.members = slices.Insert(root.members, 1, member{"$comment", editorComment})
	var b bytes.Buffer
	if err := writeJSON(&b, root); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// editor rewrites the parts of the schema that check the whole file.
type editor struct {
	defaults    map[string]any // values.yaml
	keys        []string       // the keys values.yaml holds, in schema order
	definitions any            // the schema's definitions, for $ref
}

// rewrite rewrites one part of the schema that checks the whole file, at path,
// and the parts under it that check the whole file too. It refuses a keyword
// whose verdict could depend on the keys the file leaves out, other than
// required and properties, rather than give editors a wrong schema.
func (e *editor) rewrite(schema any, path string) error {
	node, ok := schema.(*object)
	if !ok {
		return nil // true or false, whatever the keys
	}
	for _, m := range node.members {
		switch m.key {
		case "allOf", "anyOf", "oneOf":
			list, _ := m.value.([]any)
			for i, sub := range list {
				if err := e.rewrite(sub, fmt.Sprintf("%s/%s/%d", path, m.key, i)); err != nil {
					return err
				}
			}
		case "not", "if", "then", "else":
			if err := e.rewrite(m.value, path+"/"+m.key); err != nil {
				return err
			}
		case "required", "properties":
		case "$schema", "$comment", "title", "description", "x-error", "type", "additionalProperties", "definitions":
			// The keys of values.yaml are all properties of the root, so
			// additionalProperties never checks them.
		default:
			return fmt.Errorf("settings schema: %s/%s checks the whole settings, and the editor schema cannot tell how the defaults of values.yaml change its verdict", path, m.key)
		}
	}
	return e.rewriteKeys(node, path)
}

// rewriteKeys rewrites required and properties of one part of the schema.
func (e *editor) rewriteKeys(node *object, path string) error {
	r, _ := node.get("required")
	required, _ := r.([]any)
	properties, _ := node.get("properties")
	props, ok := properties.(*object)
	if !ok {
		props = &object{}
	}
	for _, k := range e.keys {
		p, hasP := props.get(k)
		wasRequired := slices.Contains(required, any(k))
		if !hasP && !wasRequired {
			continue
		}
		if !hasP {
			p = &object{} // anything
		}
		takesDefault, takesNull, err := e.accepts(p, e.defaults[k])
		if err != nil {
			return fmt.Errorf("settings schema: %s/properties/%s: %w", path, k, err)
		}
		required = slices.DeleteFunc(required, func(r any) bool { return r == k })
		if !takesDefault {
			required = append(required, k)
		}
		isNull := &object{[]member{{"type", "null"}}}
		switch {
		case takesNull == !wasRequired: // null gets the verdict of the merged values already
		case wasRequired:
			props.set(k, &object{[]member{{"allOf", []any{&object{[]member{{"not", isNull}}}, p}}}})
		default: // null second, so that editors explain a wrong value by p
			props.set(k, &object{[]member{{"anyOf", []any{p, isNull}}}})
		}
	}
	if len(required) > 0 {
		node.set("required", required)
	} else {
		node.remove("required")
	}
	if len(props.members) > 0 {
		node.set("properties", props)
	}
	return nil
}

// accepts tells whether the property schema p, in the settings schema,
// accepts the value v, and whether it accepts null.
func (e *editor) accepts(p, v any) (value, null bool, err error) {
	var doc bytes.Buffer
	wrapper := &object{[]member{{"allOf", []any{p}}}}
	if e.definitions != nil {
		wrapper.set("definitions", e.definitions)
	}
	if err := writeJSON(&doc, wrapper); err != nil {
		return false, false, err
	}
	compiled, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(doc.Bytes()))
	if err != nil {
		return false, false, err
	}
	if value, err = valid(compiled, v); err != nil {
		return false, false, err
	}
	null, err = valid(compiled, nil)
	return value, null, err
}

func valid(s *gojsonschema.Schema, v any) (bool, error) {
	result, err := s.Validate(gojsonschema.NewGoLoader(v))
	if err != nil {
		return false, err
	}
	return result.Valid(), nil
}

// object is a JSON object that keeps the order of its members, so that the
// editor schema lists everything in the order of settings.schema.json.
type object struct{ members []member }

type member struct {
	key   string
	value any
}

func (o *object) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// set replaces the value of key, or adds key at the end.
func (o *object) set(key string, value any) {
	for i, m := range o.members {
		if m.key == key {
			o.members[i].value = value
			return
		}
	}
	o.members = append(o.members, member{key, value})
}

func (o *object) remove(key string) {
	o.members = slices.DeleteFunc(o.members, func(m member) bool { return m.key == key })
}

// decodeJSON reads one JSON value: objects as *object, arrays as []any,
// numbers as json.Number, so that they are written back as they were.
func decodeJSON(dec *json.Decoder) (any, error) {
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &object{}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return nil, err
			}
			value, err := decodeJSON(dec)
			if err != nil {
				return nil, err
			}
			o.members = append(o.members, member{key.(string), value})
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			value, err := decodeJSON(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, value)
		}
		_, err := dec.Token()
		return a, err
	}
	return tok, nil
}

// writeJSON writes a value read by decodeJSON, compact, without escaping
// HTML's characters.
func writeJSON(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, m := range v.members {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, m.key); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeJSON(b, m.value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, item); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		var scalar bytes.Buffer
		enc := json.NewEncoder(&scalar)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Write(bytes.TrimSuffix(scalar.Bytes(), []byte("\n")))
	}
	return nil
}
