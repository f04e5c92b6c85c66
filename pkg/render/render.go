// Package render renders settings into Kubernetes manifests with the embedded
// chart, through Helm's own engine, the way helm template does.
package render

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/pkg/settings"
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
	Warnings settings.Problems
}

// Render applies the chart's defaults to the user's settings, validates them
// and renders the chart. Invalid settings give settings.Problems, placed in
// the user's files.
func Render(in *settings.Input) (*Result, error) {
	// The validator is compiled once per process, and that takes as long as a
	// render: do it while the chart renders, on another CPU. The render is
	// thrown away when the settings turn out invalid; every loop in the chart
	// is bounded on its own, so it never runs long on settings not validated
	// yet.
	type compiled struct {
		validator *settings.Validator
		err       error
	}
	compiling := make(chan compiled, 1)
	go func() {
		v, err := settings.DefaultValidator()
		compiling <- compiled{v, err}
	}()
	c, err := Chart()
	if err != nil {
		return nil, err
	}
	// As helm template does, minus Helm's schema check: the Validator checks
	// the same schema and explains what it finds.
	top, err := chartutil.ToRenderValuesWithSchemaValidation(c, in.Values,
		chartutil.ReleaseOptions{Name: "release-name", Namespace: "default", IsInstall: true}, nil, true)
	if err != nil {
		return nil, err
	}
	values := top["Values"].(chartutil.Values)
	rendered, renderErr := engine.Engine{}.Render(c, top)
	v := <-compiling
	if v.err != nil {
		return nil, v.err
	}
	if issues := v.validator.Validate(values); len(issues) > 0 {
		return nil, in.Locate(issues)
	}
	if renderErr != nil {
		if issues := chartIssues(renderErr); issues != nil {
			return nil, in.Locate(issues)
		}
		return nil, fmt.Errorf("the chart failed to render these settings; please report this bug: %w", renderErr)
	}
	manifest := stream(rendered)
	if len(manifest) == 0 {
		return nil, errors.New("the chart rendered nothing for these settings; please report this bug")
	}
	warnings := in.Locate(settings.Warnings(values))
	for i := range warnings {
		warnings[i].Warning = true
	}
	return &Result{Manifest: manifest, Values: values, Warnings: warnings}, nil
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
func chartIssues(err error) []settings.Issue {
	m := chartFailure.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	var issues []settings.Issue
	for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		key, msg, ok := strings.Cut(line, ": ")
		if !ok {
			key, msg = "", line
		}
		issues = append(issues, settings.Issue{Path: settings.ParsePath(key), Message: msg})
	}
	return issues
}
