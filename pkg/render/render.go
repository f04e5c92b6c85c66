// Package render renders settings into Kubernetes manifests with the embedded
// chart, through Helm's own engine, the way helm template does.
package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
	"github.com/torchwrap/generator/pkg/warnings"
	"github.com/torchwrap/generator/pkg/workspace"
)

// Chart is the embedded chart, loaded on first use.
var Chart = sync.OnceValues(chartfiles.Load)

// Result is a successful render.
type Result struct {
	// Manifest is the YAML stream: each object starts with "---".
	Manifest []byte
	// Values are the settings the chart saw: the user's over the defaults.
	Values map[string]any
	// Warnings are advice on valid but risky settings, placed in the input.
	Warnings diag.List
	// ConfigMaps carry the workspace shipped with the job, if any
	// (workspace.Packed.ConfigMaps): they go to the cluster before the job.
	ConfigMaps []map[string]any
	// HelmHook is the ConfigMap jobName-helm-hook of helmHook: true (nil
	// for none): for Helm, the record of the job it created last. render
	// writes it; submit and run --local, which are not Helm, leave it out.
	HelmHook map[string]any
}

// Prepare starts compiling the validator on another CPU, for a render to come,
// while the caller loads the settings. Render works without it, only later.
func Prepare() {
	go validate.Default()
}

// Render applies the chart's defaults to the user's settings, validates them
// and renders the chart. Invalid settings give a diag.List, placed in
// the user's files. With a profile (nil for none), whose values the settings
// were put over (Profile.Apply), the settings must also keep its imposed
// values and rules; a profile with problems of its own is a profile.Invalid,
// and nothing is rendered under it. With a packed workspace (nil for none),
// the pods unpack it, and the Result has its ConfigMaps.
func Render(in *settings.Input, p *profile.Profile, ws *workspace.Packed) (*Result, error) {
	// The validator is compiled once per process, and that takes about as long
	// as a render: it is compiled on another CPU (from Prepare, or from now)
	// while the chart loads, and checks the values there while the chart
	// renders them (the chart only reads them). The render is thrown away when
	// the settings turn out invalid; every loop in the chart is bounded on its
	// own, so it never runs long on settings not validated yet.
	compiling := make(chan checked, 1)
	go func() {
		v, err := validate.Default()
		compiling <- checked{validator: v, err: err}
	}()
	c, err := generatorChart()
	if err != nil {
		return nil, err
	}
	top, err := renderValues(c, in)
	if err != nil {
		return nil, err
	}
	values := top["Values"].(chartutil.Values)
	checking := make(chan checked, 1)
	go func() {
		v := <-compiling
		if v.err == nil {
			v.err = profileProblems(p)
		}
		if v.err == nil {
			v.issues = v.check(values, p)
		}
		checking <- v
	}()
	docs, renderErr := renderEach(c, []map[string]any{item(values, ws)})
	v := <-checking
	if v.err != nil {
		return nil, v.err
	}
	if len(v.issues) > 0 {
		return nil, in.Locate(v.issues)
	}
	if renderErr != nil {
		return nil, renderErr
	}
	result, err := outcome(in, values, docs[0])
	if err == nil && ws != nil {
		result.ConfigMaps = ws.ConfigMaps(jobName(values), namespace(values))
	}
	return result, err
}

// Stream is what render writes: the workspace's ConfigMaps, helmHook's
// ConfigMap, then the manifest.
func (r *Result) Stream() []byte {
	var b bytes.Buffer
	write := func(cm map[string]any) {
		data, err := yaml.Marshal(cm)
		if err != nil {
			panic(fmt.Sprintf("a ConfigMap of strings cannot fail to marshal: %v", err))
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	for _, cm := range r.ConfigMaps {
		write(cm)
	}
	if r.HelmHook != nil {
		write(r.HelmHook)
	}
	b.Write(r.Manifest)
	return b.Bytes()
}

// item is what the generator's template renders for one job: its values,
// and the workspace it ships (nil for none) as torchwrap.manifest takes it.
func item(values chartutil.Values, ws *workspace.Packed) map[string]any {
	it := map[string]any{"values": map[string]any(values)}
	if ws != nil {
		it["workspace"] = map[string]any{
			"configMaps": workspace.Names(jobName(values), ws.Parts),
			"digest":     ws.Digest, "files": ws.Files, "bytes": ws.Bytes, "folder": ws.Folder,
		}
	}
	return it
}

// jobName and namespace are the values' jobName and namespace ("" when
// not set, or not strings: the checks refuse those).
func jobName(values chartutil.Values) string   { s, _ := values["jobName"].(string); return s }
func namespace(values chartutil.Values) string { s, _ := values["namespace"].(string); return s }

// checked is the validator, once compiled, and what it found in the values.
type checked struct {
	validator *validate.Validator
	issues    []diag.Diagnostic
	err       error
}

// check validates values, then checks them against the profile, if any: a
// key the schema refuses is not checked against the profile too.
func (c checked) check(values map[string]any, p *profile.Profile) []diag.Diagnostic {
	issues := c.validator.Validate(values)
	if p == nil {
		return issues
	}
	refused := map[string]bool{}
	for _, is := range issues {
		refused[is.Path.String()] = true
	}
	for _, is := range p.Check(values) {
		if !refused[is.Path.String()] {
			issues = append(issues, is)
		}
	}
	return issues
}

// profileProblems is the profile's own problems as an error, or nil when it
// has none (or there is no profile).
func profileProblems(p *profile.Profile) error {
	if p == nil {
		return nil
	}
	if problems := p.Problems(); len(problems) > 0 {
		return profile.Invalid{Problems: problems}
	}
	return nil
}

// renderValues applies the chart's defaults to the user's settings as helm
// template does, minus Helm's schema check: the Validator checks the same
// schema and explains what it finds.
func renderValues(c *chart.Chart, in *settings.Input) (chartutil.Values, error) {
	return chartutil.ToRenderValuesWithSchemaValidation(c, in.Values,
		chartutil.ReleaseOptions{Name: "release-name", Namespace: "default", IsInstall: true}, nil, true)
}

// outcome is what Render gives for one input, from its part of the output:
// the manifest with its warnings, or the problems the chart's checks found,
// placed in the input.
func outcome(in *settings.Input, values chartutil.Values, doc string) (*Result, error) {
	problems, refused, err := readProblems(doc)
	switch {
	case err != nil:
		return nil, err
	case !refused && values["helmHook"] != true:
		return result(in, values, stream(map[string]string{"": doc}))
	case !refused:
		// torchwrap.helmHook: its ConfigMap, then the job.
		record, job, _ := strings.Cut(doc, "\n---\n")
		var hook map[string]any
		if err := yaml.Unmarshal([]byte(record), &hook); err != nil {
			return nil, fmt.Errorf("the ConfigMap of helmHook cannot be read (%v); please report this bug", err)
		}
		r, err := result(in, values, stream(map[string]string{"": job}))
		if err == nil {
			r.HelmHook = hook
		}
		return r, err
	}
	issues := make([]diag.Diagnostic, len(problems))
	for i, p := range problems {
		issues[i] = diag.Diagnostic{Path: diag.ParsePath(p.Path), Message: p.Message}
	}
	return nil, in.Locate(issues)
}

// chartProblem is one problem the chart's checks found, as torchwrap.refuse
// writes it: the settings key's path as users write it ("" for none), and
// what is wrong.
type chartProblem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// readProblems reads the problems document of the chart, when doc is one
// (refused), rather than a manifest.
func readProblems(doc string) (problems []chartProblem, refused bool, err error) {
	list, refused := strings.CutPrefix(doc, problemsMarker)
	if !refused {
		return nil, false, nil
	}
	if err := json.Unmarshal([]byte(list), &problems); err != nil || len(problems) == 0 {
		return nil, true, fmt.Errorf("the chart's problems cannot be read (%v): %q; please report this bug", err, list)
	}
	return problems, true, nil
}

// result completes a successful render with its warnings.
func result(in *settings.Input, values chartutil.Values, manifest []byte) (*Result, error) {
	if len(manifest) == 0 {
		return nil, errors.New("the chart rendered nothing for these settings; please report this bug")
	}
	return &Result{Manifest: manifest, Values: values, Warnings: in.Locate(warnings.Check(values))}, nil
}

// Outcome is the render of one settings input of RenderAll: a result or an
// error, as Render gives them.
type Outcome struct {
	Result *Result
	Err    error
}

// itemMarker starts each input's part of the output of generatorChart,
// followed by its index: a comment line, which toYaml never writes at the
// start of a line.
const itemMarker = "# torchwrap/generator item "

// problemsMarker is the first line of what torchwrap.manifest writes, with
// listProblems, instead of the object when the chart's checks find problems;
// the second is the problems, a JSON list of {"path", "message"}
// (torchwrap.refuse in chart/templates/_manifest.tpl).
const problemsMarker = "# torchwrap/generator problems\n"

// generatorChart is the embedded chart with its helpers only, and one template
// that renders torchwrap.manifest, with listProblems, for every item of
// .Values.items: its values, and its workspace (item).
var generatorChart = sync.OnceValues(func() (*chart.Chart, error) {
	c, err := Chart()
	if err != nil {
		return nil, err
	}
	ours := *c
	ours.Templates = nil
	for _, t := range c.Templates {
		if strings.HasPrefix(path.Base(t.Name), "_") {
			ours.Templates = append(ours.Templates, t)
		}
	}
	ours.Templates = append(ours.Templates, &chart.File{Name: "templates/generator.yaml", Data: []byte(
		`{{- range $i, $item := .Values.items }}` + "\n" + itemMarker + `{{ $i }}` + "\n" +
			`{{ include "torchwrap.manifest" (dict "Values" $item.values "workspace" $item.workspace "Chart" $.Chart "listProblems" true) }}` + "\n" +
			`{{- end }}`)})
	return &ours, nil
})

// renderEach renders torchwrap.manifest for each of the items, in one call
// of the engine, and gives each its part of the output: the manifest, or the
// chart's problems. An error of the engine is a bug of the chart, which
// refuses settings with problems instead.
func renderEach(c *chart.Chart, items []map[string]any) ([]string, error) {
	top := chartutil.Values{"Values": chartutil.Values{"items": items}, "Chart": c.Metadata}
	rendered, err := engine.Engine{}.Render(c, top)
	if err != nil {
		return nil, fmt.Errorf("the chart failed to render these settings; please report this bug: %w", err)
	}
	parts := strings.Split(string(stream(rendered)), "\n"+itemMarker)
	if len(parts) != len(items)+1 {
		return nil, fmt.Errorf("the chart rendered %d parts for %d settings; please report this bug", len(parts)-1, len(items))
	}
	docs := make([]string, len(items))
	for i := range docs {
		_, docs[i], _ = strings.Cut(parts[i+1], "\n") // after the marker's index
	}
	return docs, nil
}

// RenderAll renders many settings inputs, giving for each what Render gives
// without a workspace,
// in one call of Helm's engine: the chart's templates are parsed once for
// all, instead of once per input. Inputs the schema (or the profile) refuses
// are left out of that call; those the chart's checks refuse get their
// problems from it.
func RenderAll(ins []*settings.Input, p *profile.Profile) []Outcome {
	outcomes := make([]Outcome, len(ins))
	fail := func(err error) []Outcome {
		for i := range outcomes {
			outcomes[i].Err = err
		}
		return outcomes
	}
	c, err := generatorChart()
	if err != nil {
		return fail(err)
	}
	validator, err := validate.Default()
	if err == nil {
		err = profileProblems(p)
	}
	if err != nil {
		return fail(err)
	}
	values := make([]chartutil.Values, len(ins))
	var valid []int
	for i, in := range ins {
		top, err := renderValues(c, in)
		if err != nil {
			outcomes[i].Err = err
			continue
		}
		values[i] = top["Values"].(chartutil.Values)
		if issues := (checked{validator: validator}).check(values[i], p); len(issues) > 0 {
			outcomes[i].Err = in.Locate(issues)
			continue
		}
		valid = append(valid, i)
	}
	if len(valid) == 0 {
		return outcomes
	}
	share := make([]map[string]any, len(valid))
	for n, i := range valid {
		share[n] = item(values[i], nil)
	}
	docs, err := renderEach(c, share)
	for n, i := range valid {
		if err != nil {
			outcomes[i].Err = err
			continue
		}
		outcomes[i].Result, outcomes[i].Err = outcome(ins[i], values[i], docs[n])
	}
	return outcomes
}

// stream joins the rendered templates into one YAML stream, in template order.
func stream(rendered map[string]string) []byte {
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		if doc := strings.TrimSpace(rendered[name]); doc != "" {
			b.WriteString("---\n" + doc + "\n")
		}
	}
	return []byte(b.String())
}
