package profile_test

import (
	"os"
	"testing"

	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/testdata/cases"
)

// BenchmarkRead reads the two profiles of testdata/profile, the cluster's
// refined by a namespace's, as a command does before it renders (the
// profile's schema, compiled once per process, is compiled before).
func BenchmarkRead(b *testing.B) {
	var sources []profile.Source
	for _, name := range []string{"cluster.yaml", "team.yaml"} {
		path := cases.Path(b, "testdata", "profile", name)
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		sources = append(sources, profile.Source{Name: path, Data: data})
	}
	if _, err := profile.Read(sources...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := profile.Read(sources...); err != nil {
			b.Fatal(err)
		}
	}
}
