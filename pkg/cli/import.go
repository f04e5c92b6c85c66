package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/importer"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// maxJobFile is the largest job file import reads: real ones are a few KiB,
// the largest with an inline training script some tens.
const maxJobFile = 4 << 20

func newImport(s Streams) *cobra.Command {
	var output string
	var check bool
	cmd := &cobra.Command{
		Use:   "import FILE|FOLDER|- ...",
		Short: "Turn existing job files into settings files",
		Long: `Import reads jobs written by hand (a Kubeflow PyTorchJob, an AppWrapper
around one, a JobSet, a Kubeflow Trainer TrainJob, or T9k's PyTorchTrainingJob
or DeepSpeedJob) and writes a settings file for each: JOBNAME.settings.yaml,
in the folder -o names. Give files, folders (their .yaml and .yml files) or -
for standard input; a file may hold many objects. Objects that are not jobs (a
ConfigMap, a training runtime) are skipped, and said so.

Each settings file is checked by rendering it and comparing the job it gives
with the job read. Its opening comment, and standard error, list every field
the settings do not carry, with its line and what to do, and what the
generator adds. A job that cannot be expressed as settings is refused with
why; then nothing is written, and no existing file is ever replaced.

With --check, import writes no file: it prints the differences between each
job read and what its settings render, as a diff of the two objects, and exits
1 when a field is not carried.`,
		Example: `  generator import pytorchjob.yaml              # writes ./NAME.settings.yaml
  generator import jobs/ -o settings/
  kubectl get pytorchjob my-job -o yaml | generator import - -o -
  generator import --check pytorchjob.yaml      # what would differ`,
		Annotations: map[string]string{consequence: "nothing was written"},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return settings.UsageError{Err: errors.New("no job file given; pass one, as in: generator import pytorchjob.yaml (- reads standard input)")}
			}
			results, err := importAll(args, s)
			if err != nil {
				return err
			}
			if check {
				return writeChecks(s.Out, results)
			}
			return writeImports(s, results, output)
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", ".", "folder to write the settings files in; - writes the one job's settings to standard output")
	cmd.Flags().BoolVar(&check, "check", false, "write nothing: print how each job differs from what its settings render, as a diff; exit 1 when a field is not carried")
	return cmd
}

// importAll imports every job of the files, or says why it cannot: every
// object that cannot be imported, one line each.
func importAll(args []string, s Streams) ([]*importer.Result, error) {
	files, err := jobFiles(args)
	if err != nil {
		return nil, err
	}
	var results []*importer.Result
	var refused []string
	for _, file := range files {
		data, err := readJobFile(file, s.In)
		if err != nil {
			return nil, err
		}
		objects, err := importer.Read(file, data)
		if err != nil {
			refused = append(refused, err.Error())
			continue
		}
		for _, obj := range objects {
			res, err := importer.Import(obj)
			var bad *importer.Error
			switch {
			case errors.As(err, &bad):
				refused = append(refused, err.Error())
			case err != nil:
				return nil, err
			case res == nil && obj.WorkspaceOf() != "":
				fmt.Fprintf(s.Err, "%s:%d: skipped a ConfigMap of the workspace of %s: it carries files, not settings\n", obj.Source, obj.Line, obj.WorkspaceOf())
			case res == nil:
				kind, _ := obj.Kind()
				fmt.Fprintf(s.Err, "%s:%d: skipped a %s: it is not a job; apply it on its own\n", obj.Source, obj.Line, kind)
			default:
				results = append(results, res)
			}
		}
	}
	if len(refused) > 0 {
		return nil, importRefused(refused)
	}
	if len(results) == 0 {
		return nil, errors.New("no job in the input: import reads a PyTorchJob, JobSet, TrainJob, PyTorchTrainingJob, DeepSpeedJob, or an AppWrapper of one")
	}
	return results, nil
}

// importRefused is the objects import cannot read as settings, one a line.
type importRefused []string

func (r importRefused) Error() string {
	return fmt.Sprintf("%s\n%s cannot be imported; nothing was written", strings.Join(r, "\n"), schema.Count(len(r), "object"))
}

// jobFiles lists the files the arguments name: files as given, the .yaml and
// .yml files of a folder (and of its folders), - for standard input.
func jobFiles(args []string) ([]string, error) {
	var files []string
	for _, arg := range args {
		info, err := os.Stat(arg)
		switch {
		case arg == "-":
			files = append(files, arg)
		case err != nil:
			return nil, settings.UsageError{Err: fmt.Errorf("cannot read %s: %w", arg, ioCause(err))}
		case info.IsDir():
			var found []string
			err := filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
					found = append(found, path)
				}
				return err
			})
			if err != nil {
				return nil, settings.UsageError{Err: fmt.Errorf("cannot read %s: %w", arg, ioCause(err))}
			}
			if len(found) == 0 {
				return nil, settings.UsageError{Err: fmt.Errorf("%s holds no .yaml or .yml file", arg)}
			}
			files = append(files, found...)
		default:
			files = append(files, arg)
		}
	}
	return files, nil
}

// readJobFile reads a job file, or standard input for "-".
func readJobFile(file string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, settings.UsageError{Err: fmt.Errorf("cannot read %s: %w", file, ioCause(err))}
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxJobFile+1))
	switch {
	case err != nil:
		return nil, settings.UsageError{Err: fmt.Errorf("cannot read %s: %w", file, ioCause(err))}
	case len(data) > maxJobFile:
		return nil, settings.UsageError{Err: fmt.Errorf("%s is larger than %d MiB: no job file is; check that it is the right file", file, maxJobFile>>20)}
	}
	return data, nil
}

// writeImports writes each job's settings file, after checking that every one
// can be written as a new file, and tells on standard error what each does
// not carry.
func writeImports(s Streams, results []*importer.Result, output string) error {
	if output == "-" {
		if len(results) != 1 {
			return settings.UsageError{Err: fmt.Errorf("-o - writes one job's settings, and the input holds %d jobs; give a folder: -o DIR", len(results))}
		}
		tell(s.Err, results[0], "standard output")
		_, err := s.Out.Write(results[0].Settings)
		return err
	}
	if info, err := os.Stat(output); err != nil || !info.IsDir() {
		return settings.UsageError{Err: fmt.Errorf("-o %s is not a folder; create it, or name another", output)}
	}
	paths := map[string]*importer.Result{}
	var problems []string
	for _, res := range results {
		path := filepath.Join(output, res.Name+".settings.yaml")
		if other, ok := paths[path]; ok {
			problems = append(problems, fmt.Sprintf("%s:%d and %s:%d are both jobs named %s; import them one at a time, into different folders", other.Source, other.Line, res.Source, res.Line, res.Name))
		} else if _, err := os.Lstat(path); err == nil {
			problems = append(problems, fmt.Sprintf("%s exists, and import writes new files only; remove it, or write to another folder with -o", path))
		}
		paths[path] = res
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	for _, res := range results {
		path := filepath.Join(output, res.Name+".settings.yaml")
		if err := writeFile(path, res.Settings, true); err != nil {
			return err
		}
		tell(s.Err, res, path)
	}
	return nil
}

// tell says what a job became: where its settings went, and each field they
// do not carry, with its line.
func tell(w io.Writer, res *importer.Result, to string) {
	fmt.Fprintf(w, "%s:%d: %s %s → %s", res.Source, res.Line, res.Read, res.Name, to)
	if ws := res.Workspace; ws != nil {
		fmt.Fprintf(w, " (it ships a workspace, %s, whose files are not imported: ship a folder again with submit --workspace FOLDER)", ws.Line())
	}
	if len(res.Lost) == 0 {
		fmt.Fprintf(w, ": every field carried (the generator adds %s)\n", schema.Count(len(res.Added), "field"))
		return
	}
	fmt.Fprintf(w, ": %s not carried:\n", schema.Count(len(res.Lost), "field"))
	for _, d := range res.Lost {
		fmt.Fprintf(w, "  %s: %s: %s\n", d.Where, d.Path, d.Reason)
	}
}

// writeChecks prints, for each job, the diff between the job read and what
// its settings render. It fails when a field is not carried.
func writeChecks(w io.Writer, results []*importer.Result) error {
	var lost []string
	for _, res := range results {
		a, err := sigsyaml.Marshal(res.Input)
		if err != nil {
			return err
		}
		b, err := sigsyaml.Marshal(res.Rendered)
		if err != nil {
			return err
		}
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
			FromFile: fmt.Sprintf("%s:%d (%s)", res.Source, res.Line, res.Read),
			ToFile:   res.Name + ".settings.yaml, rendered",
			Context:  3,
		})
		if err != nil {
			return err
		}
		if diff == "" {
			diff = fmt.Sprintf("%s:%d: %s renders as it is\n", res.Source, res.Line, res.Name)
		}
		if _, err := io.WriteString(w, diff); err != nil {
			return err
		}
		if len(res.Lost) > 0 {
			lost = append(lost, fmt.Sprintf("%s:%d: %s: %s not carried", res.Source, res.Line, res.Name, schema.Count(len(res.Lost), "field")))
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		return errors.New(strings.Join(lost, "\n") + "\n(import without --check lists each, with why)")
	}
	return nil
}
