package settings

import (
	"bytes"
	"os"
	"testing"

	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

// BenchmarkLoad reads, parses and merges one settings file.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	helloworld := cases.Example(b, "helloworld")
	for b.Loop() {
		if _, err := Load(Options{Files: []string{helloworld}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileValidator compiles the settings schema: once per process.
func BenchmarkCompileValidator(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewValidator(schema.JSON); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate validates valid settings, and invalid ones (which also
// pay for explaining each problem).
func BenchmarkValidate(b *testing.B) {
	v, err := NewValidator(schema.JSON)
	if err != nil {
		b.Fatal(err)
	}
	for name, file := range map[string]string{"valid": cases.Example(b, "helloworld"), "invalid": cases.Path(b, "testdata", "invalid", "many-problems", "settings.yaml")} {
		// The chart's defaults under the settings, as a render gives them.
		in, err := Load(Options{Files: []string{cases.Path(b, "chart", "values.yaml"), file}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.Validate(in.Values)
			}
		})
	}
}

// BenchmarkHostileInput measures how fast each hostile file is refused.
func BenchmarkHostileInput(b *testing.B) {
	for _, name := range []string{"alias-bomb", "deep-nesting", "binary-garbage", "invalid-utf8", "duplicate-key"} {
		data, err := os.ReadFile(cases.Path(b, "testdata", "invalid", name, "settings.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(Options{Files: []string{"-"}, Stdin: bytes.NewReader(data)}); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
