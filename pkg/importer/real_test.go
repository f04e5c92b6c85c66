package importer_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/importer"
	"github.com/torchwrap/generator/testdata/cases"
)

// Public job files no one here wrote (testdata/import/real, and T9k's in
// testdata/t9k-examples), imported: what each object became, and the
// counts docs/import.md reports, in testdata/import/real.txt (make golden
// rewrites it; review the diff as a change of behaviour).
func TestRealFiles(t *testing.T) {
	files, err := filepath.Glob(cases.Path(t, "testdata", "import", "real", "*.yaml"))
	require.NoError(t, err)
	t9k, err := filepath.Glob(cases.Path(t, "testdata", "t9k-examples", "*.yaml"))
	require.NoError(t, err)
	files = append(files, t9k...)
	require.Greater(t, len(files), 30)

	var report strings.Builder
	var whole, losses, refused, skipped int
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		name := filepath.Base(file)
		objects, err := importer.Read(name, data)
		var bad *importer.Error
		if errors.As(err, &bad) {
			fmt.Fprintf(&report, "%s\n  refused: %s\n", err, bad.Msg)
			refused++
			continue
		}
		require.NoError(t, err)
		for _, obj := range objects {
			res, err := importer.Import(obj)
			kind, _ := obj.Kind()
			switch {
			case errors.As(err, &bad):
				fmt.Fprintf(&report, "%s:%d: %s refused: %s\n", name, obj.Line, kind, bad.Msg)
				refused++
			case err != nil:
				t.Fatalf("%s: %v", name, err)
			case res == nil:
				fmt.Fprintf(&report, "%s:%d: %s skipped: not a job\n", name, obj.Line, kind)
				skipped++
			case len(res.Lost) == 0:
				fmt.Fprintf(&report, "%s:%d: %s %s: nothing lost; the generator adds %d fields\n", name, obj.Line, res.Read, res.Name, len(res.Added))
				whole++
			default:
				fmt.Fprintf(&report, "%s:%d: %s %s: %d not carried; the generator adds %d fields\n", name, obj.Line, res.Read, res.Name, len(res.Lost), len(res.Added))
				for _, d := range res.Lost {
					fmt.Fprintf(&report, "  line %s: %s\n", strings.TrimPrefix(d.Where, name+":"), d.Path)
				}
				losses++
			}
		}
	}
	fmt.Fprintf(&report, "\n%d jobs: %d imported with nothing lost, %d with listed losses, %d refused; %d objects skipped (not jobs)\n",
		whole+losses+refused, whole, losses, refused, skipped)
	cases.Check(t, cases.Path(t, "testdata", "import", "real.txt"), []byte(report.String()))
}
