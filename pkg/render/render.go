// Package render renders settings into Kubernetes manifests with the embedded
// chart, through Helm's own engine, the way helm template does.
package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
	"github.com/torchwrap/generator/pkg/warnings"
)

// Chart is the embedded chart, loaded on first use.
var Chart = sync.OnceValues(LoadEmbeddedChart)

// LoadEmbeddedChart loads the chart embedded in the binary.
func LoadEmbeddedChart() (*chart.Chart, error) {
	return loadChart(chartfiles.Files)
}

func loadChart(fsys fs.FS) (*chart.Chart, error) {
	var files []*loader.BufferedFile
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		files = append(files, &loader.BufferedFile{Name: path, Data: data})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("embedded chart: %w", err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("embedded chart: %w", err)
	}
	return c, nil
}

// Result is a successful render.
type Result struct {
	// Manifest is the YAML stream: each object starts with "---".
	Manifest []byte
	// Values are the settings the chart saw: the user's over the defaults.
	Values map[string]any
	// Warnings are advice on valid but risky settings, placed in the input.
	Warnings diag.List
}

// Render applies the chart's defaults to the user's settings, validates them
// and renders the chart. Invalid settings give a diag.List, placed in
// the user's files.
func Render(in *settings.Input) (*Result, error) {
	// The validator is compiled once per process, and that takes as long as a
	// render: do it while the chart renders, on another CPU. The render is
	// thrown away when the settings turn out invalid; every loop in the chart
	// is bounded on its own, so it never runs long on settings not validated
	// yet.
	type compiled struct {
		validator *validate.Validator
		err       error
	}
	compiling := make(chan compiled, 1)
	go func() {
		v, err := validate.Default()
		compiling <- compiled{v, err}
	}()
	c, err := Chart()
	if err != nil {
		return nil, err
	}
	top, err := renderValues(c, in)
	if err != nil {
		return nil, err
	}
	rendered, renderErr := engine.Engine{}.Render(c, top)
	v := <-compiling
	if v.err != nil {
		return nil, v.err
	}
	values := top["Values"].(chartutil.Values)
	if issues := v.validator.Validate(values); len(issues) > 0 {
		return nil, in.Locate(issues)
	}
	if renderErr != nil {
		return nil, renderError(in, renderErr)
	}
	return result(in, values, stream(rendered))
}

// renderValues applies the chart's defaults to the user's settings as helm
// template does, minus Helm's schema check: the Validator checks the same
// schema and explains what it finds.
func renderValues(c *chart.Chart, in *settings.Input) (chartutil.Values, error) {
	return chartutil.ToRenderValuesWithSchemaValidation(c, in.Values,
		chartutil.ReleaseOptions{Name: "release-name", Namespace: "default", IsInstall: true}, nil, true)
}

// renderError turns the chart's own refusal (fail) into the user's problems;
// anything else is a bug.
func renderError(in *settings.Input, err error) error {
	if issues := chartIssues(err); issues != nil {
		return in.Locate(issues)
	}
	return fmt.Errorf("the chart failed to render these settings; please report this bug: %w", err)
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

// batchMarker starts each input's part of a batch render, followed by its
// index: a comment line, which toYaml never writes at the start of a line.
const batchMarker = "# torchwrap/generator batch item "

// batchChart is the embedded chart with its helpers only, and one template
// that renders torchwrap.manifest for every item of .Values.items.
var batchChart = sync.OnceValues(func() (*chart.Chart, error) {
	c, err := Chart()
	if err != nil {
		return nil, err
	}
	batch := *c
	batch.Templates = nil
	for _, t := range c.Templates {
		if strings.HasPrefix(path.Base(t.Name), "_") {
			batch.Templates = append(batch.Templates, t)
		}
	}
	batch.Templates = append(batch.Templates, &chart.File{Name: "templates/batch.yaml", Data: []byte(
		`{{- range $i, $values := .Values.items }}` + "\n" + batchMarker + `{{ $i }}` + "\n" +
			`{{ include "torchwrap.manifest" (dict "Values" $values "Chart" $.Chart) }}` + "\n" +
			`{{- end }}`)})
	return &batch, nil
})

// RenderAll renders many settings inputs, giving for each what Render gives,
// in one call of Helm's engine: the chart's templates are parsed once for
// all, instead of once per input. Invalid inputs are left out of that call.
func RenderAll(ins []*settings.Input) []Outcome {
	outcomes := make([]Outcome, len(ins))
	fail := func(err error) []Outcome {
		for i := range outcomes {
			outcomes[i].Err = err
		}
		return outcomes
	}
	c, err := batchChart()
	if err != nil {
		return fail(err)
	}
	validator, err := validate.Default()
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
		if issues := validator.Validate(values[i]); len(issues) > 0 {
			outcomes[i].Err = in.Locate(issues)
			continue
		}
		valid = append(valid, i)
	}
	renderItems(c, ins, values, valid, outcomes)
	return outcomes
}

// renderItems renders the inputs ins[i], i in items, in one call of the
// engine. When the chart refuses one of them, the engine tells only the first
// refusal: the items are halved and each half rendered again, down to single
// items, so every refusal reaches the input it concerns and the others are
// still rendered together.
func renderItems(c *chart.Chart, ins []*settings.Input, values []chartutil.Values, items []int, outcomes []Outcome) {
	if len(items) == 0 {
		return
	}
	list := make([]any, len(items))
	for n, i := range items {
		list[n] = map[string]any(values[i])
	}
	top := chartutil.Values{"Values": chartutil.Values{"items": list}, "Chart": c.Metadata}
	rendered, err := engine.Engine{}.Render(c, top)
	switch {
	case err == nil:
		parts := strings.Split(string(stream(rendered)), "\n"+batchMarker)
		for n, i := range items {
			_, doc, _ := strings.Cut(parts[n+1], "\n") // after the marker's index
			outcomes[i].Result, outcomes[i].Err = result(ins[i], values[i], stream(map[string]string{"": doc}))
		}
	case len(items) == 1:
		outcomes[items[0]].Err = renderError(ins[items[0]], err)
	default:
		renderItems(c, ins, values, items[:len(items)/2], outcomes)
		renderItems(c, ins, values, items[len(items)/2:], outcomes)
	}
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

var chartFailure = regexp.MustCompile(`(?s)^execution error at \([^)]*\): (.*)$`)

// chartIssues reads the problems the chart reports with fail (torchwrap.check):
// one per line, each "key.path: message". nil when err is not such a report.
func chartIssues(err error) []diag.Diagnostic {
	m := chartFailure.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	var issues []diag.Diagnostic
	for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		key, msg, ok := strings.Cut(line, ": ")
		if !ok {
			key, msg = "", line
		}
		issues = append(issues, diag.Diagnostic{Path: diag.ParsePath(key), Message: msg})
	}
	return issues
}
