// Package profile is what a platform team gives every job of its cluster, or
// of one namespace, once: defaults (settings every job starts from), imposed
// values (settings no user may change) and rules on the settings, each with
// the platform's own message. It reads a profile (a file, or the text of a
// ConfigMap), checks it, layers the cluster's and the namespace's, puts its
// values under the user's settings, checks the user's settings against it,
// and translates its rules into a ValidatingAdmissionPolicy for the API
// server. The command line and the chart only call it.
package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
	"github.com/torchwrap/generator/schema"
)

// Where a cluster keeps its profiles: a ConfigMap of this name, its text
// under this key, in the namespace of the jobs it is for, or in
// ClusterNamespace for every namespace.
const (
	ConfigMapName    = "torchwrap-profile"
	ConfigMapKey     = "profile.yaml"
	ClusterNamespace = "kube-public"
	// APIVersion and Kind are what a profile's first lines say.
	APIVersion = "torchwrap.dev/v1alpha1"
	Kind       = "Profile"
)

// File is a profile file, for the messages about one that cannot be read.
var File = settings.Document{Noun: "profile", Flag: "--profile", Example: "kind: Profile"}

// Source is the text of one profile and what it is called in messages: a
// file's path, or "ConfigMap NAMESPACE/NAME".
type Source struct {
	Name string
	Data []byte
}

// ConfigMap is how messages name the profile ConfigMap of a namespace.
func ConfigMap(namespace string) string {
	return "ConfigMap " + namespace + "/" + ConfigMapName
}

// Places are the namespaces whose ConfigMap ConfigMapName holds a profile
// for the jobs of namespace, the cluster's first.
func Places(namespace string) []string {
	if namespace == ClusterNamespace {
		return []string{ClusterNamespace}
	}
	return []string{ClusterNamespace, namespace}
}

// FromConfigMap is the profile in the data of the ConfigMap ConfigMapName of
// a namespace, under ConfigMapKey.
func FromConfigMap(namespace string, data map[string]string) (Source, error) {
	name := ConfigMap(namespace)
	text, ok := data[ConfigMapKey]
	if !ok {
		keys := slices.Sorted(maps.Keys(data))
		return Source{}, Invalid{diag.List{{Source: name, Message: fmt.Sprintf("has no key %s, where a profile's text is kept (its keys: %s); generator profile render writes the ConfigMap of a profile file",
			ConfigMapKey, strings.Join(keys, ", "))}}}
	}
	return Source{Name: name, Data: []byte(text)}, nil
}

// Profile is the profiles that apply to a job, each refining the ones before
// it: the cluster's, then the namespace's (or the files given, in order).
type Profile struct {
	parts []*part
	// imposed are the imposed values of every part, each key once.
	imposed []*imposed
	// rules are the rules of every part: a job keeps them all.
	rules []*rule
	// problems are what Problems finds, once.
	problems func() diag.List
}

// part is one profile read.
type part struct {
	source      string
	description string
	// in places diagnostics in the profile's own text.
	in       *settings.Input
	defaults settings.Layer
	imposed  []*imposed
	rules    []*rule
}

// imposed is one imposed value.
type imposed struct {
	path    diag.Path
	value   any
	message string
	// key and node are the positions of its key and value in the profile.
	key, node *yaml.Node
	// at is where it is written, for messages: "team-a.yaml:9".
	at string
}

// Invalid is a profile that cannot be applied: its problems, placed in its
// own text. No job is rendered under it.
type Invalid struct{ Problems diag.List }

func (e Invalid) Error() string { return e.Problems.Error() }

// Read reads profiles, each refining the ones before it, and checks what can
// be checked without the settings' validator: the profile's own schema, the
// keys its parts name, its rules' schemas against the types of their keys,
// and the parts against each other. Problems checks the rest. A profile with
// problems is an Invalid error, every problem of every part at once.
func Read(sources ...Source) (*Profile, error) {
	if len(sources) == 0 {
		return nil, errors.New("no profile to read")
	}
	meta, err := metaValidator()
	if err != nil {
		return nil, err
	}
	keys, err := settingsKeys()
	if err != nil {
		return nil, err
	}
	p := &Profile{}
	var problems diag.List
	for _, src := range sources {
		pt, found := readPart(src, meta, keys)
		problems = append(problems, found...)
		if pt != nil {
			p.parts = append(p.parts, pt)
		}
	}
	if len(problems) == 0 {
		problems = p.layer()
	}
	if len(problems) > 0 {
		return nil, Invalid{problems}
	}
	p.problems = sync.OnceValue(p.check)
	return p, nil
}

// metaValidator is the validator of the profile's own schema, compiled once.
var metaValidator = sync.OnceValues(func() (*validate.Validator, error) {
	return validate.Compile(schema.ProfileJSON, schema.ProfileModel)
})

// settingsKeys are the keys of the settings schema, from its index.
var settingsKeys = schema.Index

// readPart reads one profile: its text, its schema, the keys it names.
func readPart(src Source, meta *validate.Validator, keys schema.Keys) (*part, diag.List) {
	doc, values, problems := File.Read(src.Name, src.Data)
	if len(problems) > 0 {
		return nil, problems
	}
	if values == nil {
		values = map[string]any{}
	}
	root := doc
	if len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	in := settings.Parsed(src.Name, root, values)
	if issues := meta.Validate(values); len(issues) > 0 {
		return nil, in.Locate(issues)
	}
	pt := &part{source: src.Name, in: in}
	pt.description, _ = values["description"].(string)
	defaults, _ := values["defaults"].(map[string]any)
	pt.defaults = settings.Layer{Name: src.Name, Node: childNode(root, "defaults"), Values: defaults}
	var issues []diag.Diagnostic
	for _, key := range []string{"jobName", "namespace"} {
		if _, ok := defaults[key]; ok {
			issues = append(issues, diag.Diagnostic{Path: diag.Path{"defaults", key}, AtKey: true,
				Message: fmt.Sprintf("a profile cannot set %s: every job has one of its own, which the command line finds before the profile applies; remove it", key)})
		}
	}
	items, _ := values["imposed"].([]any)
	for i, item := range items {
		fields := item.(map[string]any)
		at := diag.Path{"imposed", fmt.Sprint(i)}
		path, issue := imposedPath(fields["key"].(string), keys)
		if issue != "" {
			issues = append(issues, diag.Diagnostic{Path: append(at, "key"), Message: issue})
			continue
		}
		pt.imposed = append(pt.imposed, &imposed{path: path, value: fields["value"], message: fields["message"].(string),
			key: nodeAt(root, append(at, "key")), node: nodeAt(root, append(at, "value")), at: fmt.Sprintf("%s:%d", src.Name, nodeAt(root, at).Line)})
	}
	for i, item := range items {
		for _, other := range items[:i] {
			if item.(map[string]any)["key"] == other.(map[string]any)["key"] {
				issues = append(issues, diag.Diagnostic{Path: diag.Path{"imposed", fmt.Sprint(i), "key"},
					Message: "imposed twice in this profile; keep one of the two"})
			}
		}
	}
	rules, _ := values["rules"].([]any)
	for i, item := range rules {
		r, found := newRule(item.(map[string]any), diag.Path{"rules", fmt.Sprint(i)}, root, src.Name, keys)
		issues = append(issues, found...)
		if r != nil {
			r.part = pt
			pt.rules = append(pt.rules, r)
		}
	}
	if len(issues) > 0 {
		return nil, in.Locate(issues)
	}
	return pt, nil
}

// imposedPath reads the key of an imposed value: a key of the settings, not
// inside a list, and not one a profile cannot set. It gives the key's path,
// or why it cannot be imposed.
func imposedPath(key string, keys schema.Keys) (diag.Path, string) {
	k, issue := findKey(key, keys)
	switch {
	case issue != "":
		return nil, issue
	case strings.Contains(k.Path, "[]"):
		return nil, fmt.Sprintf("%s is inside a list, and a profile imposes whole settings; impose %s instead", k.Path, k.Path[:strings.Index(k.Path, "[]")])
	case k.Path == "jobName" || k.Path == "namespace":
		return nil, fmt.Sprintf("a profile cannot impose %s: every job has one of its own, which the command line finds before the profile applies", k.Path)
	}
	return diag.ParsePath(k.Path), ""
}

// findKey finds the settings key a profile names, or says why it is none.
func findKey(name string, keys schema.Keys) (schema.Key, string) {
	k, ok, guess := keys.Find(name)
	switch {
	case ok:
		return k, ""
	case guess != "":
		return k, fmt.Sprintf("%q is not a key of settings.yaml; did you mean %s?", name, guess)
	}
	return k, fmt.Sprintf("%q is not a key of settings.yaml; generator explain lists them", name)
}

// layer checks the parts against each other, then gathers their imposed
// values and rules: a part may impose what one before it imposes only with
// the same value, and may not give a default to what one before it imposes.
func (p *Profile) layer() diag.List {
	var problems diag.List
	byKey := map[string]*imposed{}
	for _, pt := range p.parts {
		var issues []diag.Diagnostic
		for _, im := range append(p.imposed[:len(p.imposed):len(p.imposed)], pt.imposed...) {
			if _, set := settings.ValueAt(pt.defaults.Values, im.path); set {
				issues = append(issues, diag.Diagnostic{Path: append(diag.Path{"defaults"}, im.path...), AtKey: true,
					Message: fmt.Sprintf("%s is imposed by %s, and an imposed value is the default too; remove it here", im.path, im.at)})
			}
		}
		for i, im := range pt.imposed {
			if before, ok := byKey[im.path.String()]; ok {
				if !same(before.value, im.value) {
					issues = append(issues, diag.Diagnostic{Path: diag.Path{"imposed", fmt.Sprint(i), "value"},
						Message: fmt.Sprintf("%s is imposed as %s by %s, which a later profile cannot change; remove it here, or change it there", im.path, show(before.value), before.at)})
				}
				continue
			}
			byKey[im.path.String()] = im
			p.imposed = append(p.imposed, im)
		}
		problems = append(problems, pt.in.Locate(issues)...)
		p.rules = append(p.rules, pt.rules...)
	}
	return problems
}

// Name says which profile this is, for the one line each command writes:
// its parts' sources and descriptions, the last refining those before.
func (p *Profile) Name() string {
	var names []string
	for _, pt := range p.parts {
		name := pt.source
		if pt.description != "" {
			name += fmt.Sprintf(" (%s)", pt.description)
		}
		names = append(names, name)
	}
	return strings.Join(names, ", refined by ")
}

// Layers are the profile's values, which the user's settings go over: each
// part's defaults, in order, then the imposed values, so that an imposed
// value wins over every default.
func (p *Profile) Layers() []settings.Layer {
	layers := p.defaultLayers()
	for _, pt := range p.parts {
		if len(pt.imposed) > 0 {
			layers = append(layers, imposedLayer(pt.source, pt.imposed))
		}
	}
	return layers
}

// Apply puts the profile's values under the user's settings: its defaults
// as defaults, which a user may remove with a null.
func (p *Profile) Apply(in *settings.Input) (*settings.Input, error) {
	layers := p.Layers()
	for i := range layers[:len(p.defaultLayers())] {
		layers[i].Defaults = true
	}
	return in.Over(layers)
}

// Values are the profile's values as one map, as the layers merge them: the
// values file that gives helm template what the profile gives a render.
func (p *Profile) Values() (map[string]any, error) {
	in, err := (&settings.Input{}).Over(p.Layers())
	if err != nil {
		return nil, err
	}
	return in.Values, nil
}

// imposedLayer is the imposed values of one part as settings: a mapping of
// the keys, nested where a key has dots, whose keys are placed where the
// profile names them and whose values where it writes them.
func imposedLayer(source string, list []*imposed) settings.Layer {
	root := &yaml.Node{Kind: yaml.MappingNode}
	values := map[string]any{}
	for _, im := range list {
		node, into := root, values
		for i, seg := range im.path {
			if i == len(im.path)-1 {
				node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: seg, Line: im.key.Line, Column: im.key.Column}, im.node)
				into[seg] = im.value
				break
			}
			child := childNode(node, seg)
			if child == nil {
				child = &yaml.Node{Kind: yaml.MappingNode, Line: im.key.Line, Column: im.key.Column}
				node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: seg, Line: im.key.Line, Column: im.key.Column}, child)
				into[seg] = map[string]any{}
			}
			node, into = child, into[seg].(map[string]any)
		}
	}
	return settings.Layer{Name: source, Node: root, Values: values}
}

// childNode is the value of key in a mapping node, or nil.
func childNode(mapping *yaml.Node, key string) *yaml.Node {
	if mapping == nil || mapping.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if mapping.Content[i].Value == key {
			return mapping.Content[i+1]
		}
	}
	return nil
}

// nodeAt is the node at path in a document the profile's schema accepted,
// where every step of path is there.
func nodeAt(root *yaml.Node, path diag.Path) *yaml.Node {
	n := root
	for _, seg := range path {
		if n.Kind == yaml.SequenceNode {
			var i int
			fmt.Sscan(seg, &i)
			n = n.Content[i]
			continue
		}
		n = childNode(n, seg)
	}
	return n
}

// same tells whether two values of settings are the same, whatever the Go
// types of their numbers (a file's float64, --set's int64).
func same(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// show writes a value for a message: text quoted, anything else as JSON.
func show(value any) string {
	if s, ok := value.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	data, err := json.Marshal(value)
	if err != nil {
		return fmt.Sprint(value)
	}
	return string(data)
}
