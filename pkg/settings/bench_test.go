package settings_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/testdata/cases"
)

// BenchmarkLoad reads, parses and merges one settings file.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	helloworld := cases.Example(b, "helloworld")
	for b.Loop() {
		if _, err := settings.Load(settings.Options{Files: []string{helloworld}}); err != nil {
			b.Fatal(err)
		}
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
				if _, err := settings.Load(settings.Options{Files: []string{"-"}, Stdin: bytes.NewReader(data)}); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
