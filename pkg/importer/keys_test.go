package importer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/importer"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// kinds are the job kinds a setting is tried with.
var kinds = []string{"PyTorchJob", "JobSet", "TrainJob", "PyTorchTrainingJob", "DeepSpeedJob"}

// moreValues are values to try for the settings whose schema gives no
// example (beyond their choices, and true for a flag).
var moreValues = map[string][]any{
	"queueName":         {"team-queue", nil},
	"numPods":           {3.0},
	"numCpusPerPod":     {"2500m", 4.0},
	"numGpusPerPod":     {2.0},
	"totalMemoryPerPod": {"64Gi"},
	"numRoceGdr":        {2.0},
}

// Every setting, and every field of one, can be imported: a job rendered
// from settings that set it (to its example, each of its choices, or true)
// imports into settings that render the same job, with whichever kind
// accepts it. A setting added to the schema and the chart without a way
// back fails here.
func TestEverySettingHasAnImportPath(t *testing.T) {
	model, err := schema.Model()
	require.NoError(t, err)
	for _, key := range model.Keys() {
		t.Run(key.Path, func(t *testing.T) {
			t.Parallel()
			tried := 0
			path, tries := key.Path, valuesOf(t, key)
			for len(tries) == 0 {
				// A field with no example of its own: the nearest example
				// of the keys above it.
				path = strings.TrimSuffix(path[:strings.LastIndex(path, ".")], "[]")
				if above, _, _ := model.Keys().Find(path); above.Example != nil {
					tries = []any{example(model.Keys(), path)}
				}
			}
			for _, value := range tries {
				rendered := map[string]bool{}
				for _, base := range bases() {
					if rendered[base["jobKind"].(string)] {
						continue // one job of each kind is enough
					}
					values := base
					set(values, path, value, model.Keys(), len(base) > 6)
					manifest, ok := renderValues(t, values)
					if !ok {
						continue
					}
					tried++
					rendered[base["jobKind"].(string)] = true
					objects, err := importer.Read("rendered", manifest)
					require.NoError(t, err)
					res, err := importer.Import(objects[0])
					require.NoError(t, err, "%s = %v in %v", key.Path, value, base)
					var want map[string]any
					require.NoError(t, sigsyaml.Unmarshal(manifest, &want))
					assert.Equal(t, want, res.Rendered, "%s = %v in %v: the imported settings render another job:\n%s", key.Path, value, base, res.Settings)
					assert.Empty(t, res.Lost, "%s = %v in %v", key.Path, value, base)
				}
			}
			assert.NotZero(t, tried, "no settings that set %s render; give it an example in the schema", key.Path)
		})
	}
}

// bases are the settings a key is set in: a job of each kind, queued by
// Kueue or not (T9k's scheduler takes only a job Kueue does not queue).
func bases() []map[string]any {
	var all []map[string]any
	for _, kind := range kinds {
		for _, queued := range []bool{true, false} {
			for _, bare := range []bool{false, true} {
				base := map[string]any{"jobName": "key-test", "containerImage": "busybox:1.36", "jobKind": kind, "numPods": 2.0, "mainProgram": "train.py"}
				if !queued {
					base["queueName"] = nil
				}
				if bare {
					base["numGpusPerPod"] = 8.0 // limitGpusPerPod's example
				}
				all = append(all, base)
			}
		}
	}
	return all
}

// valuesOf are the values a key is tried with.
func valuesOf(t *testing.T, key schema.Key) []any {
	var values []any
	if key.Example != nil {
		var v any
		require.NoError(t, json.Unmarshal(key.Example, &v))
		values = append(values, v)
	}
	values = append(values, key.Enum...)
	if strings.HasPrefix(key.Type, "boolean") {
		values = append(values, true)
	}
	return append(values, moreValues[key.Path]...)
}

// set sets a key (a path such as volumes[].readOnly) to value in the
// settings, starting from the examples of the keys above it: in a list, the
// example's item that has the field, alone. With bare, the object that
// holds the field starts empty instead (topology.preferred cannot sit beside
// the example's required).
func set(values map[string]any, path string, value any, keys schema.Keys, bare bool) {
	parts := strings.Split(path, ".")
	var node any = values
	prefix := ""
	for i, part := range parts {
		name, isList := strings.CutSuffix(part, "[]")
		prefix += name
		m := node.(map[string]any)
		switch {
		case i == len(parts)-1 && isList:
			m[name] = []any{value}
			return
		case i == len(parts)-1:
			m[name] = value
			return
		case m[name] == nil && bare && i == len(parts)-2 && !isList:
			m[name] = map[string]any{}
		case m[name] == nil:
			m[name] = example(keys, prefix)
		}
		node = m[name]
		if isList {
			items := node.([]any)
			next := strings.TrimSuffix(parts[i+1], "[]")
			node = items[0]
			for _, item := range items {
				if _, ok := item.(map[string]any)[next]; ok {
					node = item
					break
				}
			}
			m[name] = []any{node}
			prefix += "[]"
		}
		prefix += "."
	}
}

// example is a key's example, or an empty object.
func example(keys schema.Keys, path string) any {
	key, ok, _ := keys.Find(path)
	if ok && key.Example != nil {
		var v any
		if json.Unmarshal(key.Example, &v) == nil {
			return v
		}
	}
	if ok && strings.HasPrefix(key.Type, "list") {
		return []any{map[string]any{}}
	}
	return map[string]any{}
}

// renderValues renders settings; false when they are not valid.
func renderValues(t *testing.T, values map[string]any) ([]byte, bool) {
	text, err := sigsyaml.Marshal(values)
	require.NoError(t, err)
	in, err := settings.Load(settings.Options{Files: []string{"-"}, Stdin: bytes.NewReader(text)})
	require.NoError(t, err, fmt.Sprint(values))
	res, err := render.Render(in, nil, nil)
	if err != nil {
		return nil, false
	}
	return res.Manifest, true
}
