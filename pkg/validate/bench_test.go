package validate_test

import (
	"testing"

	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

// BenchmarkCompileValidator compiles the settings schema: once per process.
func BenchmarkCompileValidator(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := validate.Compile(validate.ValidatorSchema, schema.Model); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate validates valid settings, and invalid ones (which also
// pay for explaining each problem).
func BenchmarkValidate(b *testing.B) {
	v, err := validate.Compile(validate.ValidatorSchema, schema.Model)
	if err != nil {
		b.Fatal(err)
	}
	for name, file := range map[string]string{"valid": cases.Example(b, "helloworld"), "invalid": cases.Path(b, "testdata", "invalid", "many-problems", "settings.yaml")} {
		// The chart's defaults under the settings, as a render gives them.
		in, err := settings.Load(settings.Options{Files: []string{cases.Path(b, "chart", "values.yaml"), file}})
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
