package importer

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// The values of a decoded object, read without type assertions at every
// step.

func str(v any) string {
	s, _ := v.(string)
	return s
}

func present(s string) (any, bool) { return s, s != "" }

func num(v any, otherwise float64) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return otherwise
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func strs(v any) []string {
	var out []string
	for _, item := range list(v) {
		out = append(out, fmt.Sprint(item))
	}
	return out
}

// pick is the fields of a map that it has.
func pick(v any, fields ...string) any {
	m := mapOf(v)
	out := map[string]any{}
	for _, f := range fields {
		if value, ok := m[f]; ok {
			out[f] = value
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	return keys
}
