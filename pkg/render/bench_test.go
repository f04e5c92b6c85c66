package render_test

import (
	"path/filepath"
	"testing"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/testdata/cases"
)

// BenchmarkRender renders each example from loaded settings: defaults,
// validation, and the chart through Helm's engine.
func BenchmarkRender(b *testing.B) {
	for _, file := range cases.Examples(b) {
		in, err := settings.Load(settings.Options{Files: []string{file}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(file), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := render.Render(in, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEndToEnd goes from a settings file to the manifest, as one render
// of a batch does (the chart and the schema are loaded once per process).
func BenchmarkEndToEnd(b *testing.B) {
	helloworld := cases.Example(b, "helloworld")
	b.ReportAllocs()
	for b.Loop() {
		in, err := settings.Load(settings.Options{Files: []string{helloworld}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := render.Render(in, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadChart loads the embedded chart (chart.Load): once per process.
func BenchmarkLoadChart(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chartfiles.Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderAll renders 100 settings inputs in one engine call, against
// 100 separate renders: the chart's templates are parsed once instead of 100
// times.
func BenchmarkRenderAll(b *testing.B) {
	files := cases.Examples(b)
	var ins []*settings.Input
	for i := range 100 {
		in, err := settings.Load(settings.Options{Files: []string{files[i%len(files)]}})
		if err != nil {
			b.Fatal(err)
		}
		ins = append(ins, in)
	}
	b.Run("one engine call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, o := range render.RenderAll(ins, nil) {
				if o.Err != nil {
					b.Fatal(o.Err)
				}
			}
		}
	})
	b.Run("one call each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, in := range ins {
				if _, err := render.Render(in, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
