package render_test

import (
	"fmt"
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
		want[c.Settings()] = cases.Render(t, c.Settings())
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		// Each goroutine only records what it rendered; the test's own
		// goroutine compares, since require may stop only that goroutine.
		const rounds = 4
		got := make([][]byte, rounds*len(files))
		errs := make([]error, len(got))
		var wg sync.WaitGroup
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = render1(files[i%len(files)])
			}()
		}
		wg.Wait()
		for i := range got {
			f := files[i%len(files)]
			require.NoError(t, errs[i], "GOMAXPROCS=%d %s", procs, f)
			require.Equal(t, string(want[f]), string(got[i]), "GOMAXPROCS=%d %s", procs, f)
		}
	}
}

// The chart only reads the values it renders, whatever they are (settings
// the schema refuses may even make it fail), so Render can validate them on
// another CPU while the chart renders them.
func TestChartOnlyReadsTheValues(t *testing.T) {
	for _, file := range cases.AllSettings(t) {
		in, err := settings.Load(settings.Options{Files: []string{file}})
		if err != nil {
			continue // refused before there are values
		}
		values := chartValues(t, in)
		before := fmt.Sprintf("%#v", values)
		render.ChartProblems(values)
		require.Equal(t, before, fmt.Sprintf("%#v", values), file)
	}
}

// render1 renders one settings file.
func render1(file string) ([]byte, error) {
	in, err := settings.Load(settings.Options{Files: []string{file}})
	if err != nil {
		return nil, err
	}
	result, err := render.Render(in, nil, nil)
	if err != nil {
		return nil, err
	}
	return result.Stream(), nil
}
