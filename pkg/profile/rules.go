package profile

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// rule is one rule of a profile: what the value of a key must be (a JSON
// Schema of the value), or that the key must be set, with its message.
type rule struct {
	key      schema.Key
	schema   map[string]any // nil when the rule only requires the key
	required bool
	message  string
	// part and path place diagnostics about the rule in its profile; at
	// is where it is written, for messages: "team-a.yaml:14".
	part *part
	path diag.Path
	at   string
}

// newRule reads the rule at path in a profile the profile's schema accepted:
// its key, and its schema checked against the key's types.
func newRule(fields map[string]any, path diag.Path, root *yaml.Node, source string, keys schema.Keys) (*rule, []diag.Diagnostic) {
	k, issue := findKey(fields["key"].(string), keys)
	if issue != "" {
		return nil, []diag.Diagnostic{{Path: append(path[:len(path):len(path)], "key"), Message: issue}}
	}
	r := &rule{key: k, message: fields["message"].(string), path: path}
	r.schema, _ = fields["schema"].(map[string]any)
	r.required, _ = fields["required"].(bool)
	r.at = fmt.Sprintf("%s:%d", source, nodeAt(root, path).Line)
	if r.schema == nil && !r.required {
		return nil, []diag.Diagnostic{{Path: path, Message: "a rule says what the value must be (schema) or that the key must be set (required: true), and this one says neither; add one of them"}}
	}
	if r.schema == nil {
		return r, nil
	}
	if issues := fits(r.schema, append(path[:len(path):len(path)], "schema"), k, k.Types); len(issues) > 0 {
		return nil, issues
	}
	return r, nil
}

// fits checks a rule's schema against the types of its key: each keyword
// must apply to one of them (a pattern is no rule on a number), each value
// of const and enum must be one of them, and each pattern must be a regular
// expression.
func fits(s map[string]any, path diag.Path, k schema.Key, types []string) []diag.Diagnostic {
	var issues []diag.Diagnostic
	for _, kw := range keywords {
		value, ok := s[kw.name]
		if !ok {
			continue
		}
		at := append(path[:len(path):len(path)], kw.name)
		switch {
		case kw.types != nil && !slices.ContainsFunc(kw.types, func(t string) bool { return slices.Contains(types, t) }):
			issues = append(issues, diag.Diagnostic{Path: at, AtKey: true,
				Message: fmt.Sprintf("applies to %s, and %s is %s, so that the rule would never apply; use one of %s", typeWords(kw.types), k.Path, article(k.Type), keywordsFor(types))})
		case kw.name == "const":
			issues = append(issues, fitsType(value, at, k, types)...)
		case kw.name == "enum":
			for i, v := range value.([]any) {
				issues = append(issues, fitsType(v, append(at[:len(at):len(at)], strconv.Itoa(i)), k, types)...)
			}
		case kw.name == "pattern":
			if _, err := regexp.Compile(value.(string)); err != nil {
				issues = append(issues, diag.Diagnostic{Path: at, Message: fmt.Sprintf("is not a regular expression (Go's, RE2): %v", strings.TrimPrefix(err.Error(), "error parsing regexp: "))})
			}
		case kw.name == "not":
			issues = append(issues, fits(value.(map[string]any), at, k, types)...)
		}
	}
	return issues
}

// keywordsFor lists the keywords of a rule that apply to values of types.
func keywordsFor(types []string) string {
	var names []string
	for _, kw := range keywords {
		if kw.types == nil || slices.ContainsFunc(kw.types, func(t string) bool { return slices.Contains(types, t) }) {
			names = append(names, kw.name)
		}
	}
	return strings.Join(names, ", ")
}

// fitsType checks a value of const or enum against the types of its key.
func fitsType(value any, at diag.Path, k schema.Key, types []string) []diag.Diagnostic {
	t := jsonType(value)
	if slices.Contains(types, t) || (t == "integer" && slices.Contains(types, "number")) {
		return nil
	}
	return []diag.Diagnostic{{Path: at, Message: fmt.Sprintf("%s is %s, and %s is %s: no value of it could be this", show(value), typeWords([]string{t}), k.Path, article(k.Type))}}
}

// jsonType is the JSON Schema type of a value of settings.
func jsonType(value any) string {
	switch v := value.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	}
	return "integer"
}

func typeWords(types []string) string {
	var words []string
	for _, t := range types {
		words = append(words, map[string]string{"integer": "whole numbers", "number": "numbers", "string": "text", "array": "lists", "boolean": "true or false", "object": "mappings", "null": "null"}[t])
	}
	return schema.AndList(words)
}

// article puts "a" or "an" before a type in words ("an integer or null").
func article(words string) string {
	if strings.HasPrefix(words, "list") || strings.HasPrefix(words, "map") {
		return "a " + words
	}
	if strings.ContainsAny(words[:1], "aeiou") {
		return "an " + words
	}
	return "a " + words
}

// found is a value a rule applies to: the concrete path of the key (list
// indices for its []), and its value, or none.
type found struct {
	path  diag.Path
	value any
	set   bool
}

// find gives every value of the rule's key in values: one, or one for each
// item of a list that the key is inside of ([]). A key not set is found
// unset, unless it is inside a list that is not set.
func (r *rule) find(values map[string]any) []found {
	segs := strings.Split(strings.ReplaceAll(r.key.Path, "[]", ".[]"), ".")
	var out []found
	var walk func(cur any, i int, path diag.Path)
	walk = func(cur any, i int, path diag.Path) {
		if i == len(segs) {
			out = append(out, found{path: path, value: cur, set: cur != nil})
			return
		}
		if segs[i] == "[]" {
			items, _ := cur.([]any)
			for n, item := range items {
				walk(item, i+1, append(path[:len(path):len(path)], strconv.Itoa(n)))
			}
			return
		}
		m, _ := cur.(map[string]any)
		walk(m[segs[i]], i+1, append(path[:len(path):len(path)], segs[i]))
	}
	walk(values, 0, nil)
	return out
}

// check gives a diagnostic for each value of the rule's key in values that
// breaks it, at the value's path.
func (r *rule) check(values map[string]any) []diag.Diagnostic {
	var issues []diag.Diagnostic
	for _, f := range r.find(values) {
		switch {
		case !f.set && r.required:
			issues = append(issues, diag.Diagnostic{Path: f.path, Message: fmt.Sprintf("required by the profile (%s): %s", r.at, r.message)})
		case f.set && r.schema != nil && !keeps(r.schema, f.value):
			issues = append(issues, diag.Diagnostic{Path: f.path, Message: fmt.Sprintf("%s breaks a rule of the profile (%s; %s): %s", show(f.value), describe(r.schema), r.at, r.message)})
		}
	}
	return issues
}

// Check gives a diagnostic, at its key's path, for each of the settings'
// values (after the chart's defaults, those of the job's kind too) that goes
// against the profile: a value other than an imposed one, and one that
// breaks a rule.
func (p *Profile) Check(values map[string]any) []diag.Diagnostic {
	values = withKindDefaults(values)
	var issues []diag.Diagnostic
	for _, im := range p.imposed {
		got, _ := settings.ValueAt(values, im.path)
		path, got, want, ok := differs(im.path, got, im.value)
		switch {
		case !ok:
		case got == nil:
			issues = append(issues, diag.Diagnostic{Path: path,
				Message: fmt.Sprintf("an empty value removes %s, which the profile imposes (%s): %s; leave %s out of your settings, the profile sets it", show(want), im.at, im.message, path)})
		default:
			issues = append(issues, diag.Diagnostic{Path: path,
				Message: fmt.Sprintf("%s goes against the profile, which imposes %s (%s): %s; leave %s out of your settings, the profile sets it", show(got), show(want), im.at, im.message, path)})
		}
	}
	for _, r := range p.rules {
		issues = append(issues, r.check(values)...)
	}
	return issues
}

// withKindDefaults is values as the chart's templates read them: a setting
// whose default follows jobKind (x-kind-defaults), left out, has its kind's
// default; left empty, too, unless null is one of its defaults (priority:
// null leaves the PriorityClass out). torchwrap.settings, in the chart,
// does the same.
func withKindDefaults(values map[string]any) map[string]any {
	keys, err := settingsKeys()
	if err != nil {
		return values
	}
	kind, _ := values["jobKind"].(string)
	out := maps.Clone(values)
	for _, k := range keys {
		if k.KindDefaults == nil || strings.ContainsAny(k.Path, ".[") {
			continue
		}
		v, set := values[k.Path]
		if set && (v != nil || nullIsADefault(k)) {
			continue
		}
		def := k.Default
		if kd, ok := k.KindDefaults[kind]; ok {
			def = kd
		}
		var d any
		if json.Unmarshal(def, &d) == nil {
			out[k.Path] = d
		}
	}
	return out
}

// nullIsADefault tells whether null is the default of a key for some kind.
func nullIsADefault(k schema.Key) bool {
	for _, d := range append([]json.RawMessage{k.Default}, slices.Collect(maps.Values(k.KindDefaults))...) {
		if string(d) == "null" {
			return true
		}
	}
	return false
}

// differs finds where got, at path, does not hold the imposed value want:
// a value other than want, or for a mapping, an entry of want with another
// value (a user may add entries to an imposed nodeSelector, not change its
// own). It gives that place, the values there, and whether there is one.
func differs(path diag.Path, got, want any) (diag.Path, any, any, bool) {
	wantMap, isMap := want.(map[string]any)
	gotMap, gotIsMap := got.(map[string]any)
	if !isMap || !gotIsMap {
		return path, got, want, !same(got, want)
	}
	for _, k := range slices.Sorted(maps.Keys(wantMap)) {
		if at, g, w, ok := differs(append(path[:len(path):len(path)], k), gotMap[k], wantMap[k]); ok {
			return at, g, w, true
		}
	}
	return nil, nil, nil, false
}
