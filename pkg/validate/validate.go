// Package validate checks settings, after the chart's defaults are applied,
// against the settings schema, and explains each violation in words: what is
// wrong and how to fix it, with a corrected value where one can be guessed.
package validate

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/xeipuuv/gojsonschema"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// Validator checks settings against the settings schema and explains each
// violation in words: what is wrong and how to fix it.
//
// The schema is compiled once, in parts that together say what it says: the
// schema without its root allOf, and each rule of that allOf on its own, so
// that a broken rule is named by its own message (x-error) instead of "some
// allOf branch failed". Helm checks the rules with the rest of the schema.
// Valid settings cost one pass of each part. Explaining also needs the
// schema's model (for messages, examples and suggestions), read the first
// time settings are invalid.
type Validator struct {
	base      *gojsonschema.Schema
	rules     []*gojsonschema.Schema // in the order of the root allOf
	explainer func() (*explainer, error)
}

// explainer turns schema violations into issues.
type explainer struct {
	model *schema.Schema
	rules []string                  // the message of each rule
	defs  map[*schema.Schema]string // definition nodes by name, for suggestions
}

// validatorSchema is the settings schema without its annotations, which
// gojsonschema does not read (go generate ./schema writes it): the validator
// compiles that, and takes the words of its explanations from the schema's
// model.
//
//go:embed validator.schema.json
var validatorSchema []byte

// Default is the Validator of the settings schema, compiled on first use.
var Default = sync.OnceValues(func() (*Validator, error) {
	return Compile(validatorSchema, schema.Model)
})

// Compile compiles a schema document (the settings', or a profile's); model
// reads the same schema as a model, with its annotations, for the
// explanations.
func Compile(schemaJSON []byte, model func() (*schema.Schema, error)) (*Validator, error) {
	doc, err := decode(schemaJSON)
	if err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	root, _ := doc.(map[string]any)
	ruleDocs, _ := root["allOf"].([]any)
	delete(root, "allOf")
	v := &Validator{explainer: sync.OnceValues(func() (*explainer, error) {
		m, err := model()
		if err != nil {
			return nil, err
		}
		return newExplainer(m, len(ruleDocs))
	})}
	if v.base, err = newSchema(definitionsOnce(root)); err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	for i, r := range ruleDocs {
		ruleDoc, _ := r.(map[string]any)
		check, err := newSchema(ruleDoc)
		if err != nil {
			return nil, fmt.Errorf("settings schema: allOf[%d]: %w", i, err)
		}
		v.rules = append(v.rules, check)
	}
	return v, nil
}

// newSchema compiles a part of the settings schema, decoded, as the draft the
// settings schema is written in.
func newSchema(doc map[string]any) (*gojsonschema.Schema, error) {
	loader := gojsonschema.NewSchemaLoader()
	loader.Draft = gojsonschema.Draft7
	return loader.Compile(gojsonschema.NewRawLoader(doc))
}

// definitionsOnce moves the definitions of a schema document where
// gojsonschema parses them once instead of twice. It parses each definition
// where it is declared, then again where it is first referenced, and uses only
// the second; declared under a keyword it does not read ("$defs", as later
// drafts name them), with every reference pointing there, a definition is
// parsed where it is used only: compiling the schema takes about a quarter
// less memory, most of it the definitions' patterns, compiled twice before.
func definitionsOnce(root map[string]any) map[string]any {
	if defs, ok := root["definitions"]; ok {
		delete(root, "definitions")
		root["$defs"] = defs
		repointRefs(root)
	}
	return root
}

// repointRefs makes every "#/definitions/NAME" reference in a decoded schema
// document "#/$defs/NAME".
func repointRefs(node any) {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if ref, ok := v.(string); ok && k == "$ref" {
				if name, ok := strings.CutPrefix(ref, "#/definitions/"); ok {
					n[k] = "#/$defs/" + name
				}
				continue
			}
			repointRefs(v)
		}
	case []any:
		for _, v := range n {
			repointRefs(v)
		}
	}
}

// newExplainer explains with the words of model, the schema whose root allOf
// the validator compiled as rules.
func newExplainer(model *schema.Schema, rules int) (*explainer, error) {
	if len(model.AllOf) != rules {
		return nil, fmt.Errorf("the schema's model has %d rules and the compiled schema %d; run go generate ./schema", len(model.AllOf), rules)
	}
	x := &explainer{model: model, defs: map[*schema.Schema]string{}}
	for _, r := range model.AllOf {
		x.rules = append(x.rules, r.Error)
	}
	for name, d := range model.Definitions {
		x.defs[d] = name
	}
	return x, nil
}

// schemaError is a gojsonschema error with its path split into segments.
type schemaError struct {
	path diag.Path
	gojsonschema.ResultError
}

// Validate returns every issue with values, the settings after the chart's
// defaults were applied (as Helm validates them). None means valid.
func (v *Validator) Validate(values map[string]any) []diag.Diagnostic {
	return v.validate(values, v.rules, false)
}

// Keys returns the issues of values with each key on its own: its type, its
// format, a key that does not exist; not a key that is missing, nor the rules
// of the schema's root allOf, which tie keys together. It checks a part of
// settings, such as a profile's defaults.
func (v *Validator) Keys(values map[string]any) []diag.Diagnostic {
	return v.validate(values, nil, true)
}

// validate checks values against the schema without its root allOf, and
// against each of rules; part: the values are a part of settings, which
// need not hold every key.
func (v *Validator) validate(values map[string]any, ruleSchemas []*gojsonschema.Schema, part bool) []diag.Diagnostic {
	// Decode the values once, as gojsonschema's loaders do, for every part of
	// the schema.
	loader, err := documentLoader(values)
	if err != nil {
		return []diag.Diagnostic{{Message: "cannot validate the settings: " + err.Error()}}
	}
	base, err := v.base.Validate(loader)
	if err != nil {
		return []diag.Diagnostic{{Message: "cannot validate the settings: " + err.Error()}}
	}
	errs := schemaErrors(base)
	if part {
		errs = slices.DeleteFunc(errs, func(e schemaError) bool { return e.Type() == "required" })
	}
	valid := len(errs) == 0
	rules := make([]*gojsonschema.Result, len(ruleSchemas))
	for i, r := range ruleSchemas {
		if rules[i], err = r.Validate(loader); err != nil {
			return []diag.Diagnostic{{Message: "cannot validate the settings: " + err.Error()}}
		}
		valid = valid && rules[i].Valid()
	}
	issues := unprintable(values, nil)
	if valid {
		return issues
	}
	x, err := v.explainer()
	if err != nil {
		return append(issues, diag.Diagnostic{Message: "cannot explain the problems: " + err.Error()})
	}
	return append(issues, x.issues(errs, rules)...)
}

// issues explains why the values are invalid: the base schema's errors (for
// a part of settings, none about a key that is missing), then each broken
// rule's, one issue per key path.
func (x *explainer) issues(errs []schemaError, rules []*gojsonschema.Result) []diag.Diagnostic {
	issues := x.explain(errs)
	reported := map[string]bool{}
	for _, is := range issues {
		reported[is.Path.String()] = true
	}
	for i, result := range rules {
		var paths []diag.Path
		for _, e := range schemaErrors(result) {
			path := e.path
			switch e.Type() {
			case "condition_then", "condition_else", "number_all_of":
				continue
			case "required":
				name, _ := e.Details()["property"].(string)
				path = append(path[:len(path):len(path)], name)
			}
			paths = append(paths, path)
		}
		for _, path := range paths {
			if !reported[path.String()] && !below(path, paths) {
				reported[path.String()] = true
				issues = append(issues, diag.Diagnostic{Path: path, Message: x.rules[i]})
			}
		}
	}
	return issues
}

// below tells whether a rule's error at path is one of those under
// another of its errors, which says it for them: a list that must contain
// a value is at fault, not each of its items.
func below(path diag.Path, paths []diag.Path) bool {
	for _, p := range paths {
		if len(p) < len(path) && slices.Equal(p, path[:len(p)]) {
			return true
		}
	}
	return false
}

// unprintable finds text holding characters that YAML output cannot carry
// (the controls U+007F to U+009F, U+FFFE, U+FFFF; the others a settings file
// can only hold escaped), wherever it is in the settings: Helm's toYaml would
// write nothing at all for them.
func unprintable(value any, path diag.Path) []diag.Diagnostic {
	switch v := value.(type) {
	case string:
		for _, r := range v {
			if !settings.Printable(r) {
				return []diag.Diagnostic{{Path: path, Message: fmt.Sprintf("holds the control character U+%04X, which the manifest cannot carry; remove it", r)}}
			}
		}
	case map[string]any:
		var issues []diag.Diagnostic
		for _, k := range slices.Sorted(maps.Keys(v)) {
			issues = append(issues, unprintable(v[k], append(path[:len(path):len(path)], k))...)
		}
		return issues
	case []any:
		var issues []diag.Diagnostic
		for i, item := range v {
			issues = append(issues, unprintable(item, append(path[:len(path):len(path)], strconv.Itoa(i)))...)
		}
		return issues
	}
	return nil
}

// documentLoader gives gojsonschema the values in the form its own loaders
// decode JSON into (numbers as json.Number), decoded once.
func documentLoader(values map[string]any) (gojsonschema.JSONLoader, error) {
	data, err := json.Marshal(values)
	if err != nil {
		return nil, err
	}
	doc, err := decode(data)
	if err != nil {
		return nil, err
	}
	return gojsonschema.NewRawLoader(doc), nil
}

// decode decodes JSON as gojsonschema's loaders do: numbers as json.Number.
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

func schemaErrors(result *gojsonschema.Result) []schemaError {
	var errs []schemaError
	for _, e := range result.Errors() {
		var path diag.Path
		for _, seg := range strings.Split(e.Context().String("\x00"), "\x00")[1:] {
			path = append(path, seg)
		}
		errs = append(errs, schemaError{path, e})
	}
	return errs
}

// explain turns schema errors into issues. Errors of a combinator (anyOf,
// oneOf) are noise when a plainer error says the same at the same place; the
// plainest error per key path is kept.
func (x *explainer) explain(errs []schemaError) []diag.Diagnostic {
	var issues []diag.Diagnostic
	seen := map[string]bool{}
	add := func(is diag.Diagnostic) {
		if k := is.Path.String(); !seen[k] {
			seen[k] = true
			issues = append(issues, is)
		}
	}
	// Pass 1: a oneOf with its own message says it best; its branches only
	// require one key each, and their "required" errors are dropped.
	oneOf := map[string]bool{}
	wrongType := map[string]bool{}
	for _, e := range errs {
		if e.Type() == "invalid_type" {
			wrongType[e.path.String()] = true
		}
	}
	for _, e := range errs {
		if e.Type() == "number_one_of" && !wrongType[e.path.String()] {
			if msg := x.model.At(e.path).ErrorText(); msg != "" {
				oneOf[e.path.String()] = true
				add(diag.Diagnostic{Path: e.path, Message: msg})
			}
		}
	}
	// A map key that its propertyNames refuse is reported at the key; the
	// errors that say why come at the map's own path, and are left out.
	badKeys := map[string]bool{}
	for _, e := range errs {
		if e.Type() == "invalid_property_name" {
			badKeys[e.path.String()] = true
		}
	}
	slices.SortStableFunc(errs, func(a, b schemaError) int { return rank(a.Type()) - rank(b.Type()) })
	for _, e := range errs {
		if badKeys[e.path.String()] && e.Type() != "invalid_property_name" {
			continue
		}
		switch e.Type() {
		case "number_one_of", "number_any_of", "number_all_of":
			if !hasOther(errs, e) && !oneOf[e.path.String()] {
				add(x.valueIssue(e))
			}
		case "required":
			if !oneOf[e.path.String()] {
				add(x.requiredIssue(e))
			}
		case "additional_property_not_allowed":
			add(x.unknownKeyIssue(e))
		case "invalid_property_name":
			add(x.keyNameIssue(e))
		default:
			add(x.valueIssue(e))
		}
	}
	return issues
}

// rank orders errors about the same value from the plainest to the most
// specific: a wrong type first, since nothing else about the value matters then.
func rank(errorType string) int {
	switch errorType {
	case "invalid_type":
		return 0
	case "number_one_of", "number_any_of", "number_all_of":
		return 2
	default:
		return 1
	}
}

// hasOther tells whether another error concerns e's path or a path below it.
func hasOther(errs []schemaError, e schemaError) bool {
	for _, o := range errs {
		if o.ResultError != e.ResultError && len(o.path) >= len(e.path) && slices.Equal(o.path[:len(e.path)], e.path) {
			return true
		}
	}
	return false
}

func (x *explainer) requiredIssue(e schemaError) diag.Diagnostic {
	name, _ := e.Details()["property"].(string)
	path := append(e.path[:len(e.path):len(e.path)], name)
	node := x.model.At(path)
	if node != nil && node.Default != nil {
		// The chart has a default, so only an explicit null can remove it.
		return diag.Diagnostic{Path: path, Message: fmt.Sprintf("an empty value removes the default (%s); set a value or delete the line", compact(node.Default))}
	}
	msg := "required but not set; add it"
	if ex := example(name, node); ex != "" {
		msg += ", for example " + ex
	}
	return diag.Diagnostic{Path: path, Message: msg}
}

func (x *explainer) unknownKeyIssue(e schemaError) diag.Diagnostic {
	name, _ := e.Details()["property"].(string)
	path := append(e.path[:len(e.path):len(e.path)], name)
	var allowed, lower []string
	if parent := x.model.At(e.path); parent != nil {
		allowed, lower = parent.Resolved().Names()
	}
	msg := "unknown key"
	switch guess := schema.Closest(name, allowed, lower); {
	case guess != "":
		msg += fmt.Sprintf("; did you mean %s?", guess)
	case x.elsewhere(name) != "":
		msg += fmt.Sprintf("; %s belongs under %s", name, x.elsewhere(name))
	case len(allowed) <= 8:
		msg += "; the keys allowed here are " + strings.Join(allowed, ", ")
	default:
		msg += "; check its spelling, or remove it (" + cmp.Or(x.model.KeysHint, "generator explain lists every key") + ")"
	}
	return diag.Diagnostic{Path: path, Message: msg, AtKey: true}
}

// keyNameIssue explains a map key that is not a valid name for what the map
// holds, such as a label key.
func (x *explainer) keyNameIssue(e schemaError) diag.Diagnostic {
	name, _ := e.Details()["property"].(string)
	path := append(e.path[:len(e.path):len(e.path)], name)
	msg := "is not a valid key here"
	if parent := x.model.At(e.path); parent != nil && parent.Resolved() != nil {
		if text := parent.Resolved().PropertyNames.ErrorText(); text != "" {
			msg = text
		}
	}
	return diag.Diagnostic{Path: path, Message: show(name) + " " + msg, AtKey: true}
}

// elsewhere finds a nested setting of that name and returns its parent's path.
func (x *explainer) elsewhere(name string) string {
	for _, p := range x.model.Properties {
		if r := p.Schema.Resolved(); r != nil && r.Properties.Get(name) != nil {
			return p.Name
		}
	}
	return ""
}

func (x *explainer) valueIssue(e schemaError) diag.Diagnostic {
	node := x.model.At(e.path)
	value := e.Value()
	name := ""
	if len(e.path) > 0 {
		name = e.path[len(e.path)-1]
	}
	is := diag.Diagnostic{Path: e.path}
	switch e.Type() {
	case "invalid_type", "number_any_of":
		is.Message = typeMessage(name, node, x.defs[node.Resolved()], value)
		if node != nil {
			is.Expected = node.Types()
		}
	case "enum":
		var allowed []string
		for _, a := range node.Resolved().Enum {
			if a != nil {
				allowed = append(allowed, fmt.Sprint(a))
			}
		}
		is.Message = fmt.Sprintf("%s is not allowed; use one of %s", show(value), strings.Join(allowed, ", "))
		if s, ok := value.(string); ok {
			if guess := schema.Closest(s, allowed, lowerAll(allowed)); guess != "" {
				is.Message = fmt.Sprintf("%s is not allowed; did you mean %s? (the choices are %s)", show(value), guess, strings.Join(allowed, ", "))
			}
		}
	case "pattern", "string_gte", "string_lte":
		text := node.ErrorText()
		if text == "" {
			text = "is not valid: " + e.Description()
		}
		s, isText := value.(string)
		if def := node.Resolved(); isText && x.defs[def] == "jobName" {
			if problems := jobNameProblems(s, *def.MaxLength); problems != "" {
				text = "is not a valid job name: " + problems
			}
		}
		is.Message = show(value) + " " + text
		if isText {
			if fix := x.suggest(node, s); fix != "" && fix != s {
				is.Message += fmt.Sprintf("; use %q instead", fix)
			}
		}
	case "number_gte", "number_gt":
		is.Message = fmt.Sprintf("%s is too small; use %v or more", show(value), e.Details()["min"])
	case "number_lte", "number_lt":
		is.Message = fmt.Sprintf("%s is too large; use %v or less", show(value), e.Details()["max"])
	case "array_min_items":
		is.Message = fmt.Sprintf("needs at least %v item(s)", e.Details()["min"])
	default:
		is.Message = e.Description()
		if text := node.ErrorText(); text != "" {
			is.Message = text
			if isScalar(value) || isString(value) {
				is.Message = show(value) + " " + text
			}
		}
	}
	return is
}

// typeMessage explains a value of the wrong type, with the fix for the usual
// causes: quotes around a number, a number where text belongs (a size without
// its unit), a fraction of a CPU, a single value where a list belongs. def
// names the definition node resolves to, if any.
func typeMessage(name string, node *schema.Schema, def string, value any) string {
	if node == nil {
		return fmt.Sprintf("%s is not allowed here", show(value))
	}
	expected := slices.DeleteFunc(node.Types(), func(t string) bool { return t == "null" })
	ex := example(name, node)
	if value == nil {
		if ex == "" {
			return "is empty; set a value"
		}
		return "is empty; set a value, for example " + ex
	}
	msg := fmt.Sprintf("expected %s, found %s %s", typeWords(expected), typeOf(value), show(value))
	switch s, isString := value.(string); {
	case isString && (slices.Contains(expected, "integer") || slices.Contains(expected, "number")) && isNumber(s):
		return msg + "; write it without quotes: " + assign(name, s)
	case def == "memory" && memoryUnitFix(value) != "":
		return msg + "; a size needs a unit: " + assign(name, memoryUnitFix(value))
	case def == "cpu" && milliCPUFix(value) != "":
		return msg + "; write a fraction of a CPU in millicores: " + assign(name, milliCPUFix(value))
	case isScalar(value) && slices.Equal(expected, []string{"string"}):
		return msg + "; put it in quotes: " + assign(name, fmt.Sprintf("%q", fmt.Sprint(value)))
	case slices.Equal(expected, []string{"string"}) && colonText(value) != "":
		return msg + `; YAML read the ": " in it as a key, so put the text in quotes: ` + assign(name, fmt.Sprintf("%q", colonText(value)))
	case ex != "":
		return msg + "; for example " + ex
	default:
		return msg
	}
}

// colonText returns the text a one-entry mapping such as {echo a: b} was
// meant to be, "echo a: b", when its key and value are both plain text or
// numbers; "" otherwise.
func colonText(value any) string {
	m, ok := value.(map[string]any)
	if !ok || len(m) != 1 {
		return ""
	}
	for k, v := range m {
		switch v.(type) {
		case nil, []any, map[string]any:
			return ""
		}
		return k + ": " + fmt.Sprint(v)
	}
	return ""
}

func typeWords(types []string) string {
	words := make([]string, len(types))
	for i, t := range types {
		words[i] = map[string]string{
			"integer": "a whole number", "number": "a number", "string": "text",
			"boolean": "true or false", "array": "a list", "object": "a mapping of keys",
		}[t]
	}
	return strings.Join(words, " or ")
}

func typeOf(value any) string {
	switch value.(type) {
	case string:
		return "text"
	case bool:
		return "the boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	default:
		return "the number"
	}
}

// show writes a value for a message: text quoted and cut short, numbers plain.
func show(value any) string {
	switch v := value.(type) {
	case string:
		if r := []rune(v); len(r) > 60 {
			v = string(r[:57]) + "..."
		}
		return fmt.Sprintf("%q", v)
	case []any:
		return "[...]"
	case map[string]any:
		return "{...}"
	case json.Number:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

// example writes the schema's example of a setting as a line of YAML
// ("jobName: my-job"), or returns "" when the schema has none.
func example(name string, node *schema.Schema) string {
	if node == nil || node.FirstExample() == nil {
		return ""
	}
	return assign(name, compact(node.FirstExample()))
}

// assign writes "name: value", or just the value for a list item.
func assign(name, value string) string {
	if _, err := strconv.Atoi(name); err == nil || name == "" {
		return value
	}
	return name + ": " + value
}

func lowerAll(words []string) []string {
	lower := make([]string, len(words))
	for i, w := range words {
		lower[i] = strings.ToLower(w)
	}
	return lower
}

func isString(value any) bool {
	_, ok := value.(string)
	return ok
}

func isScalar(value any) bool {
	switch value.(type) {
	case []any, map[string]any, string:
		return false
	}
	return true
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

// compact writes a JSON value on one line as YAML accepts it: scalars plain,
// lists and mappings in flow style.
func compact(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	if s, ok := v.(string); ok {
		return s
	}
	out, _ := json.Marshal(v)
	return string(out)
}
