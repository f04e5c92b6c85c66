// Package chart embeds the Helm chart of this directory into the generator
// binary. The chart is also used as it is, with helm template, so this file is
// left out of the chart by .helmignore.
package chart

import (
	"embed"
	"fmt"
	"io/fs"
	"sync"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"
)

// Files holds the chart files a render needs. values.schema.json is left out:
// the generator validates settings itself, against schema/settings.schema.json,
// of which values.schema.json is an exact copy for Helm's users.
//
//go:embed Chart.yaml values.yaml all:templates
var Files embed.FS

// Metadata is the chart's Chart.yaml (its name and versions), read once, as
// Helm's chart loader reads it, without loading the rest of the chart.
var Metadata = sync.OnceValues(func() (*helmchart.Metadata, error) {
	data, err := Files.ReadFile("Chart.yaml")
	if err != nil {
		return nil, err
	}
	var m helmchart.Metadata
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("embedded chart: Chart.yaml: %w", err)
	}
	return &m, nil
})

// Load loads the embedded chart with Helm's chart loader, as helm template
// loads the chart's folder.
func Load() (*helmchart.Chart, error) {
	var files []*loader.BufferedFile
	err := fs.WalkDir(Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := Files.ReadFile(path)
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
