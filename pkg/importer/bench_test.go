package importer_test

import (
	"os"
	"testing"

	"github.com/torchwrap/generator/pkg/importer"
	"github.com/torchwrap/generator/testdata/cases"
)

// BenchmarkImport imports one job: reading it, deriving its settings,
// rendering them and comparing the two jobs. The helloworld example as
// rendered (read back whole), and a public PyTorchJob in an AppWrapper whose
// launch is written by hand.
func BenchmarkImport(b *testing.B) {
	public, err := os.ReadFile(cases.Path(b, "testdata", "import", "real", "project-codeflare__mlbatch__samples-pytorchjob-in-appwrapper.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, input := range []struct {
		name string
		data []byte
	}{{"helloworld-rendered", cases.Render(b, cases.Example(b, "helloworld"))}, {"mlbatch-sample", public}} {
		b.Run(input.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				objects, err := importer.Read(input.name, input.data)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := importer.Import(objects[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
