package profile

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A rule's schema is JSON Schema (draft-07) of a value, in the keywords of
// this table: what each asks of a value, for the command line (holds), for
// the API server (cel) and for people (words), in one place, so that the
// three say the same.
type keyword struct {
	name string
	// types are the JSON types of the values it applies to (none: any);
	// a value of another type keeps it, as in JSON Schema.
	types []string
	holds func(arg, v any) bool
	cel   func(arg any, x string) string
	words func(arg any) string
}

// keywords are the keywords a rule may use, in the order a rule is said in;
// set in init, since not is said with the table itself.
var keywords []keyword

func init() {
	keywords = []keyword{
		{name: "const", holds: func(arg, v any) bool { return same(v, arg) },
			cel:   func(arg any, x string) string { return x + " == " + literal(arg) },
			words: func(arg any) string { return "exactly " + show(arg) }},
		{name: "enum", holds: func(arg, v any) bool { return slices.ContainsFunc(arg.([]any), func(c any) bool { return same(v, c) }) },
			cel: func(arg any, x string) string {
				var eq []string
				for _, c := range arg.([]any) {
					eq = append(eq, x+" == "+literal(c))
				}
				return "(" + strings.Join(eq, " || ") + ")"
			},
			words: func(arg any) string {
				var choices []string
				for _, c := range arg.([]any) {
					choices = append(choices, show(c))
				}
				return "one of " + strings.Join(choices, ", ")
			}},
		compare("minimum", ">=", "at least"),
		compare("exclusiveMinimum", ">", "more than"),
		compare("maximum", "<=", "at most"),
		compare("exclusiveMaximum", "<", "less than"),
		{name: "multipleOf", types: numbers,
			holds: func(arg, v any) bool { q := toFloat(v) / toFloat(arg); return q == math.Trunc(q) },
			cel:   func(arg any, x string) string { return "int(" + x + ") % " + literal(arg) + " == 0" },
			words: func(arg any) string { return "a multiple of " + number(arg) }},
		{name: "pattern", types: texts,
			holds: func(arg, v any) bool { ok, _ := regexp.MatchString(arg.(string), v.(string)); return ok },
			cel:   func(arg any, x string) string { return x + ".matches(" + literal(arg) + ")" },
			words: func(arg any) string { return "matching " + arg.(string) }},
		length("minLength", ">=", "at least", "characters", texts),
		length("maxLength", "<=", "at most", "characters", texts),
		length("minItems", ">=", "at least", "items", lists),
		length("maxItems", "<=", "at most", "items", lists),
		{name: "uniqueItems", types: lists,
			holds: func(arg, v any) bool {
				items := v.([]any)
				for i := range items {
					for j := range i {
						if arg == true && same(items[i], items[j]) {
							return false
						}
					}
				}
				return true
			},
			words: func(arg any) string {
				return map[bool]string{true: "no item twice", false: "items as they come"}[arg == true]
			}},
		{name: "not",
			holds: func(arg, v any) bool { return !keeps(arg.(map[string]any), v) },
			cel:   func(arg any, x string) string { return "!" + predicate(arg.(map[string]any), x) },
			words: func(arg any) string { return "not " + describe(arg.(map[string]any)) }},
	}
}

var (
	numbers = []string{"integer", "number"}
	texts   = []string{"string"}
	lists   = []string{"array"}
)

// compare is a keyword that compares a number with its argument.
func compare(name, op, words string) keyword {
	return keyword{name: name, types: numbers,
		holds: func(arg, v any) bool {
			a, b := toFloat(v), toFloat(arg)
			return map[string]bool{">=": a >= b, ">": a > b, "<=": a <= b, "<": a < b}[op]
		},
		cel:   func(arg any, x string) string { return x + " " + op + " " + literal(arg) },
		words: func(arg any) string { return words + " " + number(arg) }}
}

// length is a keyword that compares the length of a text or a list with its
// argument (a text's in characters, as JSON Schema counts them).
func length(name, op, words, unit string, types []string) keyword {
	return keyword{name: name, types: types,
		holds: func(arg, v any) bool {
			n := float64(utf8.RuneCountInString(fmt.Sprint(v)))
			if items, ok := v.([]any); ok {
				n = float64(len(items))
			}
			b := toFloat(arg)
			return map[string]bool{">=": n >= b, "<=": n <= b}[op]
		},
		cel:   func(arg any, x string) string { return "size(" + x + ") " + op + " " + literal(arg) },
		words: func(arg any) string { return words + " " + number(arg) + " " + unit }}
}

// keeps tells whether a value keeps a rule's schema: every keyword that
// applies to its type holds.
func keeps(s map[string]any, v any) bool {
	t := jsonType(v)
	for _, kw := range keywords {
		arg, ok := s[kw.name]
		if !ok || (kw.types != nil && !slices.Contains(kw.types, t) && !(t == "integer" && slices.Contains(kw.types, "number"))) {
			continue
		}
		if !kw.holds(arg, v) {
			return false
		}
	}
	return true
}

// describe says in words what a rule's schema asks: "at most 8", "one of a,
// b", "not matching ^docker.io/".
func describe(s map[string]any) string {
	var parts []string
	for _, kw := range keywords {
		if arg, ok := s[kw.name]; ok {
			parts = append(parts, kw.words(arg))
		}
	}
	return strings.Join(parts, ", ")
}

// predicate is the CEL of a rule's schema on the value x, for the keywords
// the API server checks (Policy leaves out the rules of other keywords).
func predicate(s map[string]any, x string) string {
	var parts []string
	for _, kw := range keywords {
		if arg, ok := s[kw.name]; ok {
			parts = append(parts, kw.cel(arg, x))
		}
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// toFloat is a number of settings (a file's float64, --set's int64).
func toFloat(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int64:
		return float64(n)
	case int:
		return float64(n)
	}
	return math.NaN()
}

// number writes a number of a rule as its profile would: 8, 0.5.
func number(v any) string {
	return strconv.FormatFloat(toFloat(v), 'f', -1, 64)
}
