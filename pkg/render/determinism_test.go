package render_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/testdata/cases"
)

// Same settings, same bytes: whatever GOMAXPROCS is, however many renders run
// at once, and whichever way Go happens to iterate maps on each run.
func TestOutputIsDeterministic(t *testing.T) {
	var files []string
	want := map[string][]byte{}
	for _, c := range cases.Golden(t) {
		files = append(files, c.Settings())
		want[c.Settings()] = renderBytes(t, c.Settings())
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		var wg sync.WaitGroup
		for round := 0; round < 4; round++ {
			for _, f := range files {
				wg.Add(1)
				go func() {
					defer wg.Done()
					require.Equal(t, string(want[f]), string(renderBytes(t, f)), "GOMAXPROCS=%d %s", procs, f)
				}()
			}
		}
		wg.Wait()
	}
}

func renderBytes(t *testing.T, file string) []byte {
	in, err := settings.Load(settings.Options{Files: []string{file}})
	require.NoError(t, err)
	result, err := render.Render(in)
	require.NoError(t, err)
	return result.Manifest
}
