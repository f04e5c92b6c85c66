package fidelity

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"
)

// t9kSchema is our schema of T9k's PyTorchTrainingJob and DeepSpeedJob, which
// T9k publishes no CRD for (JSON Schema draft-07, kept to what a CRD's
// structural schema can say).
//
//go:embed t9k.schema.json
var t9kSchema []byte

// T9kGroupVersion is the API group and version of T9k's job kinds.
const T9kGroupVersion = "batch.tensorstack.dev/v1beta1"

// JobCRDs are the CRDs (YAML) of the jobs a cluster of the tests serves:
// T9k's (T9kCRDs), then the upstream ones given.
func JobCRDs(upstream ...UpstreamCRD) ([][]byte, error) {
	crds, err := T9kCRDs()
	if err != nil {
		return nil, err
	}
	for _, u := range upstream {
		data, err := u.Read()
		if err != nil {
			return nil, err
		}
		crds = append(crds, data)
	}
	return crds, nil
}

// T9kCRDs builds a CustomResourceDefinition (YAML) for each kind of our T9k
// schema (t9k.schema.json), in the schema's order: each kind's definition with
// every $ref written out, since a CRD cannot refer to definitions.
func T9kCRDs() ([][]byte, error) {
	var doc struct {
		OneOf       []map[string]string       `json:"oneOf"`
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(t9kSchema, &doc); err != nil {
		return nil, fmt.Errorf("T9k schema: %w", err)
	}
	group, version, _ := strings.Cut(T9kGroupVersion, "/")
	var crds [][]byte
	for _, ref := range doc.OneOf {
		kind := strings.TrimPrefix(ref["$ref"], "#/definitions/")
		def, ok := doc.Definitions[kind]
		if !ok {
			return nil, fmt.Errorf("T9k schema: no definition %s", kind)
		}
		inlined, err := inline(def, doc.Definitions, nil)
		if err != nil {
			return nil, fmt.Errorf("T9k schema: %s: %w", kind, err)
		}
		schema := inlined.(map[string]any)
		names := schema["x-crd-names"].(map[string]any)
		delete(schema, "x-crd-names")
		props := schema["properties"].(map[string]any)
		props["apiVersion"] = map[string]any{"type": "string"}
		props["kind"] = map[string]any{"type": "string"}
		props["metadata"] = map[string]any{"type": "object"}
		crd := map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1",
			"kind":       "CustomResourceDefinition",
			"metadata":   map[string]any{"name": names["plural"].(string) + "." + group},
			"spec": map[string]any{
				"group": group,
				"scope": "Namespaced",
				"names": map[string]any{
					"kind":       kind,
					"listKind":   kind + "List",
					"plural":     names["plural"],
					"singular":   names["singular"],
					"shortNames": names["shortNames"],
				},
				"versions": []any{map[string]any{
					"name":         version,
					"served":       true,
					"storage":      true,
					"subresources": map[string]any{"status": map[string]any{}},
					"schema":       map[string]any{"openAPIV3Schema": schema},
				}},
			},
		}
		data, err := sigsyaml.Marshal(crd)
		if err != nil {
			return nil, err
		}
		crds = append(crds, data)
	}
	return crds, nil
}

// inline copies a schema node with every {"$ref": "#/definitions/x"} replaced
// by a copy of that definition. seen guards against cycles.
func inline(node any, defs map[string]map[string]any, seen []string) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/definitions/")
			def, ok := defs[name]
			if !ok {
				return nil, fmt.Errorf("unknown $ref %s", ref)
			}
			for _, s := range seen {
				if s == name {
					return nil, fmt.Errorf("$ref cycle through %s", name)
				}
			}
			return inline(def, defs, append(seen, name))
		}
		out := make(map[string]any, len(n))
		for k, v := range n {
			c, err := inline(v, defs, seen)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			c, err := inline(v, defs, seen)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	default:
		return n, nil
	}
}
