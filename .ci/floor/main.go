// Command floor gives make bench the floors of a one-shot render: what a
// process pays before the generator's own work, step by step.
//
//	floor               initialises the packages Helm's engine imports, and exits
//	floor load FILE     and loads the embedded chart, reads FILE and applies the
//	                    chart's defaults
//	floor parse FILE    and has Helm's engine parse every template of the chart,
//	                    rendering none
//	floor render FILE   and has Helm's engine render the chart, and prints it
//
// Each step includes the ones before it. Like the generator, it runs with the
// garbage collector off, and it loads the same embedded chart, so that the
// difference to a generator render is the generator's own work: the command
// line, the settings with their positions, the schema, the warnings.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	chartfiles "github.com/torchwrap/generator/chart"
)

func main() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(64 << 20)
	if len(os.Args) == 1 {
		return
	}
	if len(os.Args) != 3 || !strings.Contains(" load parse render ", " "+os.Args[1]+" ") {
		fmt.Fprintln(os.Stderr, "usage: floor [load|parse|render FILE]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(step, valuesFile string) error {
	c, err := chartfiles.Load()
	if err != nil {
		return err
	}
	values, err := chartutil.ReadValuesFile(valuesFile)
	if err != nil {
		return err
	}
	top, err := chartutil.ToRenderValues(c, values, chartutil.ReleaseOptions{Name: "release-name", Namespace: "default", IsInstall: true}, nil)
	if err != nil {
		return err
	}
	switch step {
	case "load":
		return nil
	case "parse":
		// The engine parses every template and renders only those whose name
		// does not start with "_": with the helpers alone, it renders nothing.
		var helpers []*chart.File
		for _, t := range c.Templates {
			if strings.HasPrefix(t.Name, "templates/_") {
				helpers = append(helpers, t)
			}
		}
		c.Templates = helpers
	}
	rendered, err := engine.Render(c, top)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Printf("---\n%s\n", rendered[name])
	}
	return nil
}
