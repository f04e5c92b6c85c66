package fuzz_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/validate"
	"github.com/torchwrap/generator/pkg/warnings"
	"github.com/torchwrap/generator/testdata/cases"
)

// Any bytes give settings or problems: never a panic, never another error.
func FuzzLoad(f *testing.F) {
	cases.SeedCorpus(f)
	validator, err := validate.Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := settings.Load(settings.Options{Files: []string{"-"}, Stdin: bytes.NewReader(data)})
		if err != nil {
			var problems diag.List
			if !errors.As(err, &problems) || len(problems) == 0 {
				t.Fatalf("not a problem list: %T %v", err, err)
			}
			return
		}
		issues := validator.Validate(in.Values)
		for _, p := range in.Locate(issues) {
			if p.Message == "" {
				t.Fatalf("a problem without a message: %+v", p)
			}
		}
		if len(issues) == 0 {
			in.Locate(warnings.Check(in.Values))
		}
	})
}
