package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/pkg/render"
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
func (f *inputFlags) renderBatch(s Streams, out outputFlags, files []string) error {
	switch {
	case len(files) == 0:
		return settings.UsageError{Err: errors.New("--out-dir needs the settings files to render, such as: --out-dir manifests/ jobs/*.yaml")}
	case out.file != "":
		return settings.UsageError{Err: errors.New("-o and --out-dir cannot be used together: -o writes one manifest, --out-dir one per FILE; drop one of them")}
	}
	paths, err := outputPaths(out.dir, out.format, files)
	if err != nil {
		return err
	}
	p, err := f.fileProfile()
	if err != nil {
		return err
	}
	if p != nil {
		fmt.Fprintf(s.Err, "profile: %s\n", p.Name())
	}
	results := make([]batchResult, len(files))
	for i, path := range paths {
		results[i].out = path
	}
	var created []string
	for _, dir := range folders(paths) {
		made, err := makeFolder(dir)
		created = append(created, made...)
		if err != nil {
			removeFolders(created)
			return fmt.Errorf("cannot create the folder %s: %w", dir, ioCause(err))
		}
	}

	f.renderShares(results, files, out, p)
	syncFolders(results, removeFolders(created))

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
	fmt.Fprintf(s.Err, "rendered %d file(s) into %s\n", len(files), out.dir)
	return nil
}

// outputPaths names the output file of each settings file: its path below
// the deepest folder that holds all the files, in dir, with the extension of
// the format. So jobs/a/settings.yaml and jobs/b/settings.yaml are written to
// dir/a/settings.yaml and dir/b/settings.yaml, and the files of one folder
// to dir itself. Only files that differ in their extension alone can meet
// there; they are refused, as are a file given twice and an output that
// would overwrite a settings file.
func outputPaths(dir, format string, files []string) ([]string, error) {
	abs := make([]string, len(files))
	given := map[string]string{} // a file as given, by its absolute path
	for i, file := range files {
		if file == "-" {
			return nil, settings.UsageError{Err: errors.New("--out-dir renders files, and standard input (-) has no name to write it to; render it alone, with -f - -o FILE")}
		}
		var err error
		if abs[i], err = filepath.Abs(file); err != nil {
			return nil, err
		}
		if other, ok := given[abs[i]]; ok {
			return nil, settings.UsageError{Err: fmt.Errorf("%s and %s are the same file; give it once", other, file)}
		}
		given[abs[i]] = file
	}
	common := filepath.Dir(abs[0])
	for _, a := range abs[1:] {
		for !inFolder(a, common) && filepath.Dir(common) != common {
			common = filepath.Dir(common)
		}
	}
	paths := make([]string, len(files))
	written := map[string]string{} // a file, by the output it is written to
	for i, file := range files {
		rel, err := filepath.Rel(common, abs[i])
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, strings.TrimSuffix(rel, filepath.Ext(rel))+"."+format)
		if other, ok := written[path]; ok {
			return nil, settings.UsageError{Err: fmt.Errorf("%s and %s would both be written to %s; rename one", other, file, path)}
		}
		written[path] = file
		absPath, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		if settingsFile, ok := given[absPath]; ok {
			over := settingsFile
			if settingsFile == file {
				over += " itself"
			}
			return nil, settings.UsageError{Err: fmt.Errorf("--out-dir %s would write the manifest of %s over %s; choose another --out-dir", dir, file, over)}
		}
		paths[i] = path
	}
	return paths, nil
}

// inFolder tells whether the absolute path lies in folder, or below it.
func inFolder(path, folder string) bool {
	rel, err := filepath.Rel(folder, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// folders are the folders that hold the files, each once, in order.
func folders(files []string) []string {
	var dirs []string
	for _, file := range files {
		dirs = append(dirs, filepath.Dir(file))
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// renderShares renders the files in shares, on every CPU at once, and
// flushes each output file to disk as soon as it is written, while the
// other shares render. Each share is rendered in one call of Helm's engine
// (render.RenderAll), which parses the chart once for all of it: a few
// shares per CPU, so that the flushing of one overlaps the rendering of the
// next.
func (f *inputFlags) renderShares(results []batchResult, files []string, out outputFlags, p *profile.Profile) {
	workers := min(runtime.GOMAXPROCS(0), len(files))
	shares := min(len(files), sharesPerCPU*workers)
	var next, rendering atomic.Int32
	rendering.Store(int32(workers))
	written := make(chan *batchResult, len(files))
	parallel(workers+syncers, func(i int) {
		if i >= workers {
			for r := range written {
				if err := syncFile(r.out); err != nil {
					r.err = fmt.Errorf("cannot write %s: %w", r.out, ioCause(err))
				}
			}
			return
		}
		defer func() {
			if rendering.Add(-1) == 0 {
				close(written)
			}
		}()
		for s := int(next.Add(1)) - 1; s < shares; s = int(next.Add(1)) - 1 {
			from, to := s*len(files)/shares, (s+1)*len(files)/shares
			f.renderChunk(results[from:to], files[from:to], out, p, written)
		}
	})
}

// sharesPerCPU is how many shares renderShares splits a batch into per CPU.
const sharesPerCPU = 4

// syncers is how many files renderShares flushes at once: the file system
// takes the flushes that arrive together in one journal commit.
const syncers = 16

// renderChunk renders files (after the shared -f files and --set values),
// writes each one's manifest to its results' out, each atomically but
// unflushed, and hands each file written to written.
func (f *inputFlags) renderChunk(results []batchResult, files []string, out outputFlags, p *profile.Profile, written chan<- *batchResult) {
	var ins []*settings.Input
	var loaded []int
	for i, file := range files {
		in, err := settings.Load(settings.Options{Files: append(f.files[:len(f.files):len(f.files)], file), Sets: f.sets, SetStrings: f.setStrings})
		if err == nil && p != nil {
			in, err = p.Apply(in)
		}
		if err != nil {
			results[i].err = err
			continue
		}
		ins = append(ins, in)
		loaded = append(loaded, i)
	}
	for n, outcome := range render.RenderAll(ins, p) {
		r := &results[loaded[n]]
		result, err := outcome.Result, outcome.Err
		if err == nil {
			err = f.strictWarnings(result, &r.stderr)
		}
		var data []byte
		if err == nil {
			data, err = out.encode(result.Stream())
		}
		if err == nil {
			err = writeFile(r.out, data, false)
		}
		r.err = err
		if err == nil {
			written <- r
		}
	}
}

// parallel runs work(0), ..., work(n-1), each on a goroutine of its own, and
// waits for them all. A panic in one is raised again in the caller's
// goroutine, where Run reports it, instead of ending the process.
func parallel(n int, work func(i int)) {
	var wg sync.WaitGroup
	panics := make(chan any, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panics <- r
				}
			}()
			work(i)
		}()
	}
	wg.Wait()
	close(panics)
	if r, ok := <-panics; ok {
		panic(r)
	}
}

// syncFolders flushes to disk the folders that hold the names of the
// outputs written, once their files are, and the folders that hold the
// folders the batch created and kept; if one cannot be, no output is known
// to be written.
func syncFolders(results []batchResult, kept []string) {
	var written []string
	for i := range results {
		if results[i].err == nil {
			written = append(written, results[i].out)
		}
	}
	for _, dir := range folders(append(written, kept...)) {
		if err := syncFile(dir); err != nil {
			for i := range results {
				if results[i].err == nil {
					results[i].err = fmt.Errorf("cannot write %s: %w", results[i].out, ioCause(err))
				}
			}
			return
		}
	}
}

// syncFile flushes a file, or a folder's entries, to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// batchError reports how many files of a batch could not be rendered; their
// problems have been written already.
type batchError struct{ failed, total int }

func (e batchError) Error() string {
	return fmt.Sprintf("%d of %d file(s) could not be rendered; the others were written", e.failed, e.total)
}
