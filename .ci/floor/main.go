// Command floor gives make bench the floor of a one-shot render. Without
// arguments it exits as soon as the packages Helm's engine needs are
// initialised; with a chart folder and a values file it renders them the
// naive way: load, apply defaults, render, print; no schema, no checks.
package main

import (
	"fmt"
	"os"
	"sort"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

func main() {
	if len(os.Args) != 3 {
		return
	}
	if err := render(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func render(chartDir, valuesFile string) error {
	c, err := loader.Load(chartDir)
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
