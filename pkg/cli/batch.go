package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/torchwrap/generator/pkg/settings"
)

// batchResult is what rendering one file of a batch gave.
type batchResult struct {
	out    string       // the output file
	err    error        // why nothing was written
	stderr bytes.Buffer // warnings, or the problems
}

// renderBatch renders every file to its own output file in outDir, on every
// CPU at once. The chart and the schema are loaded once for all. Messages are
// written in the order of the files, whatever order they finish in.
func (f *inputFlags) renderBatch(s Streams, outDir, outFile string, files []string) error {
	switch {
	case outDir == "":
		return settings.UsageError{Err: errors.New("several settings files need --out-dir DIR to be written to; for one, use -f FILE")}
	case len(files) == 0:
		return settings.UsageError{Err: errors.New("--out-dir needs the settings files to render, such as: --out-dir manifests/ jobs/*.yaml")}
	case outFile != "":
		return settings.UsageError{Err: errors.New("-o and --out-dir cannot be used together")}
	}
	results := make([]batchResult, len(files))
	written := map[string]string{}
	for i, file := range files {
		if file == "-" {
			return settings.UsageError{Err: errors.New("--out-dir renders files; standard input (-) has no name to write it to")}
		}
		base := filepath.Base(file)
		out := filepath.Join(outDir, strings.TrimSuffix(base, filepath.Ext(base))+".yaml")
		if other, ok := written[out]; ok {
			return settings.UsageError{Err: fmt.Errorf("%s and %s would both be written to %s; rename one", other, file, out)}
		}
		written[out] = file
		results[i].out = out
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", outDir, err)
	}

	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := &results[i]
				result, err := f.renderFiles(append(f.files[:len(f.files):len(f.files)], files[i]), nil, &r.stderr)
				if err == nil {
					err = writeAtomically(r.out, result.Manifest)
				}
				r.err = err
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()

	failed := 0
	for i := range results {
		r := &results[i]
		s.Err.Write(r.stderr.Bytes())
		if r.err != nil {
			failed++
			writeError(s, r.err, r.out+" was not written")
		}
	}
	if failed > 0 {
		return batchError{failed: failed, total: len(files)}
	}
	fmt.Fprintf(s.Err, "rendered %d file(s) into %s\n", len(files), outDir)
	return nil
}

// batchError reports how many files of a batch could not be rendered; their
// problems have been written already.
type batchError struct{ failed, total int }

func (e batchError) Error() string {
	return fmt.Sprintf("%d of %d file(s) could not be rendered; the others were written", e.failed, e.total)
}
