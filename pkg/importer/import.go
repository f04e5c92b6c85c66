package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/workspace"
	"github.com/torchwrap/generator/schema"
)

// Result is one job imported.
type Result struct {
	Source string // the file it was read from
	Line   int    // the line the job starts at
	Read   string // what was read: "a PyTorchJob in an AppWrapper"
	Name   string // its jobName
	// Settings is the settings file: the settings, commented where derived,
	// under a header that lists what differs.
	Settings []byte
	// Lost are the fields of the job that the settings do not render, or
	// render otherwise; Added, what they render that the job did not have;
	// Defaulted, the fields the job's controllers set in every job of its
	// kind (as a job read from a cluster has them), which the settings leave
	// to them.
	Lost, Added, Defaulted []Difference
	// Refused are the settings read from the job that the schema or the
	// chart refuse, left out of the file, each with why.
	Refused []string
	// Input is the job as compared (without what the server writes);
	// Rendered, what the settings render.
	Input, Rendered map[string]any
	// Workspace is the folder the job ships (--workspace), as its
	// annotations say, without its files: the settings are rendered with
	// it, and the files stay in the job's ConfigMaps.
	Workspace *workspace.Packed
}

// Import reads one object into settings. It returns nil, and no error, for
// an object that holds no job (a ConfigMap, a Service). An object that cannot
// be expressed as settings at all is an *Error that says why in one line.
func Import(obj *Object) (*Result, error) {
	j, err := jobOf(obj)
	if j == nil || err != nil {
		return nil, err
	}
	r := newReading(j)
	keys, err := topKeys()
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	for _, k := range keys {
		read, ok := readers[k.Path]
		if !ok {
			return nil, fmt.Errorf("import does not know the setting %s; please report this bug", k.Path)
		}
		if v, ok := read(r); ok && (k.Path == "jobKind" || !isDefault(k, v, j.kind)) {
			values[k.Path] = v
		}
	}

	if _, ok := values["containerImage"]; !ok {
		return nil, &Error{Source: obj.Source, Line: obj.Line, Msg: fmt.Sprintf("%s whose training container names no image (it runs its image's or its runtime's): settings need the image (containerImage); add it to the job and import it again", j.describe())}
	}
	res := &Result{Source: obj.Source, Line: obj.Line, Read: j.describe(), Name: str(values["jobName"]),
		Workspace: workspace.Read(annotations(obj.Value))}
	body, rendered, err := settle(keys, values, r.notes, res.Workspace, &res.Refused)
	var refused diag.List
	if errors.As(err, &refused) {
		return nil, &Error{Source: obj.Source, Line: obj.Line, Msg: fmt.Sprintf("%s cannot be expressed as settings: %s: %s", j.describe(), refused[0].Path, refused[0].Message)}
	}
	if err != nil {
		return nil, err
	}
	if err := sigsyaml.Unmarshal(rendered.Manifest, &res.Rendered); err != nil {
		return nil, fmt.Errorf("reading the render of the imported settings: %w", err)
	}
	res.Input = comparable(obj.Value)
	for _, d := range explain(differences(j, res.Input, comparable(res.Rendered)), r.launch.note) {
		switch {
		case d.In == nil:
			res.Added = append(res.Added, d)
		case defaulted(&d):
			d.Where = obj.Where(d.Path)
			res.Defaulted = append(res.Defaulted, d)
		default:
			d.Where = obj.Where(d.Path)
			res.Lost = append(res.Lost, d)
		}
	}
	res.Settings = append(header(res), body...)
	return res, nil
}

// settle writes the settings and renders them. A value the schema or the
// chart refuses is taken out, and listed in refused with the rule's message,
// until they render. A problem with nothing to take out (a setting no file
// can be without) is returned alone, as a diag.List.
func settle(keys schema.Keys, values map[string]any, notes map[string]string, ws *workspace.Packed, refused *[]string) ([]byte, *render.Result, error) {
	for {
		body, err := settingsText(keys, values, notes)
		if err != nil {
			return nil, nil, err
		}
		rendered, err := renderText(body, ws)
		var problems diag.List
		if !errors.As(err, &problems) {
			return body, rendered, err
		}
		p := problems[0]
		part := refusedPart(p)
		name := str(mapOf(dig(values, part...))["name"])
		if !remove(values, part) {
			return nil, nil, diag.List{p}
		}
		if name != "" {
			name = " (" + name + ")"
		}
		*refused = append(*refused, fmt.Sprintf("%s%s: %s", part, name, p.Message))
	}
}

// describe says what the job is: "a PyTorchJob in an AppWrapper".
func (j *job) describe() string {
	if j.wrapped {
		return fmt.Sprintf("a %s in an AppWrapper", j.kind)
	}
	return "a " + j.kind
}

// topKeys are the settings of the file's top level, in the schema's order,
// found once per process.
var topKeys = sync.OnceValues(func() (schema.Keys, error) {
	model, err := schema.Model()
	if err != nil {
		return nil, err
	}
	var keys schema.Keys
	for _, k := range model.Keys() {
		if !strings.ContainsAny(k.Path, ".[") {
			keys = append(keys, k)
		}
	}
	return keys, nil
})

// isDefault tells whether a setting's value is its default for the kind, so
// that the file leaves it out, as a user would.
func isDefault(k schema.Key, v any, kind string) bool {
	def := k.Default
	if kd, ok := k.KindDefaults[kind]; ok {
		def = kd
	}
	if def == nil {
		return false
	}
	got, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal(def, &b) == nil && fmt.Sprint(a) == fmt.Sprint(b)
}

// refusedPart is what a problem makes import leave out: a key the schema
// does not know, or the value it refuses; within a list, the whole item (an
// environment variable without its name is no variable).
func refusedPart(p diag.Diagnostic) diag.Path {
	if p.AtKey {
		return p.Path
	}
	for i := len(p.Path) - 1; i > 0; i-- {
		if _, err := strconv.Atoi(p.Path[i]); err == nil {
			return p.Path[:i+1]
		}
	}
	return p.Path
}

// remove deletes the value at path from the settings; false when there is
// none to delete.
func remove(values map[string]any, path diag.Path) bool {
	if len(path) == 0 {
		return false
	}
	parent := any(values)
	if len(path) > 1 {
		parent = dig(values, path[:len(path)-1]...)
	}
	last := path[len(path)-1]
	switch p := parent.(type) {
	case map[string]any:
		if _, ok := p[last]; !ok {
			return false
		}
		delete(p, last)
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(p) {
			return false
		}
		rest := append(p[:i:i], p[i+1:]...)
		if len(path) == 1 {
			return false
		}
		grand := path[:len(path)-1]
		if len(grand) == 1 {
			values[grand[0]] = rest
		} else if m, ok := dig(values, grand[:len(grand)-1]...).(map[string]any); ok {
			m[grand[len(grand)-1]] = rest
		}
	default:
		return false
	}
	return true
}

// renderText renders a settings file's text.
func renderText(text []byte, ws *workspace.Packed) (*render.Result, error) {
	in, err := settings.Load(settings.Options{Files: []string{"-"}, Stdin: bytes.NewReader(text)})
	if err != nil {
		return nil, err
	}
	return render.Render(in, nil, ws)
}

// annotations are the annotations of an object read.
func annotations(obj map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range mapOf(dig(obj, "metadata", "annotations")) {
		out[k] = str(v)
	}
	return out
}

// settingsText writes the settings as a file, in the schema's order, each
// derived one under a comment that says how.
func settingsText(keys schema.Keys, values map[string]any, notes map[string]string) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range keys {
		v, ok := values[k.Path]
		if !ok {
			continue
		}
		var value yaml.Node
		if err := value.Encode(v); err != nil {
			return nil, err
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Value: k.Path}
		if note := notes[k.Path]; note != "" {
			key.HeadComment = note
		}
		doc.Content = append(doc.Content, key, &value)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// header is the file's opening comment: where the job came from, and what its
// render differs in.
func header(res *Result) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by generator import from %s (line %d): %s.\n", res.Source, res.Line, res.Read)
	if len(res.Lost) == 0 {
		b.WriteString("# Rendered, these settings give every field of that job.\n")
	} else {
		fmt.Fprintf(&b, "# Rendered, these settings give that job but for %s, listed below.\n", schema.Count(len(res.Lost), "field"))
	}
	if ws := res.Workspace; ws != nil {
		fmt.Fprintf(&b, "#\n# The job ships a workspace, %s, whose files are in its ConfigMaps, not here:\n"+
			"# ship a folder again with generator submit --workspace FOLDER.\n", ws.Line())
	}
	if len(res.Added) > 0 {
		b.WriteString("#\n# The render adds:\n")
		for _, line := range grouped(res.Added) {
			b.WriteString("#   - " + line + "\n")
		}
	}
	if len(res.Lost) > 0 {
		b.WriteString("#\n# Not carried:\n")
		for _, d := range res.Lost {
			fmt.Fprintf(&b, "#   - %s (line %s): %s\n", d.Path, strings.TrimPrefix(d.Where, res.Source+":"), d.Reason)
		}
	}
	if len(res.Defaulted) > 0 {
		b.WriteString("#\n# Left to the cluster, which sets them in every job of the kind:\n")
		for _, d := range res.Defaulted {
			fmt.Fprintf(&b, "#   - %s (line %s): %s\n", d.Path, strings.TrimPrefix(d.Where, res.Source+":"), d.Reason)
		}
	}
	if len(res.Refused) > 0 {
		b.WriteString("#\n# Read, but refused by the settings' rules, and left out:\n")
		for _, r := range res.Refused {
			b.WriteString("#   - " + strings.ReplaceAll(r, "\n", " ") + "\n")
		}
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// grouped lists additions by reason, each with how many fields it adds.
func grouped(added []Difference) []string {
	n := map[string]int{}
	var order []string
	for _, d := range added {
		if n[d.Reason] == 0 {
			order = append(order, d.Reason)
		}
		n[d.Reason]++
	}
	sort.SliceStable(order, func(i, j int) bool { return n[order[i]] > n[order[j]] })
	var lines []string
	for _, reason := range order {
		if reason != "" {
			lines = append(lines, fmt.Sprintf("%s (%s)", reason, schema.Count(n[reason], "field")))
		}
	}
	for _, d := range added {
		if d.Reason == "" {
			lines = append(lines, d.Path.String())
		}
	}
	return lines
}
