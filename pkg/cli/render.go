package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/workspace"
	"github.com/torchwrap/generator/schema"
)

// inputFlags are the flags that say where the settings come from, shared by
// render and validate.
type inputFlags struct {
	files, sets, setStrings []string
	// profiles are the --profile files, each refining the ones before.
	profiles []string
	strict   bool
	// holdWarnings leaves the warnings of a render to the caller, which
	// writes them with findings of its own (check).
	holdWarnings bool
	// profileSaid: the command said which profile it applied, which it
	// says once however often it renders.
	profileSaid bool
	// workspace is the folder of --workspace, to ship with the job; packed,
	// that folder once packed.
	workspace string
	packed    *workspace.Packed
}

func (f *inputFlags) register(cmd *cobra.Command) { f.registerAs(cmd, "f") }

// registerAs registers the flags with shorthand as --values' (-f), or
// none ("") where -f means another thing (logs -f follows, as in kubectl).
func (f *inputFlags) registerAs(cmd *cobra.Command, shorthand string) {
	flags := cmd.Flags()
	flags.StringArrayVarP(&f.files, "values", shorthand, nil, "settings file; repeat to merge several, left to right; - reads standard input")
	flags.StringArrayVar(&f.sets, "set", nil, "set settings, as helm does: key=value, a.b=value, list[0]=value, list={a,b}, several separated by commas (\\, for a comma in a value); applied after the files")
	flags.StringArrayVar(&f.setStrings, "set-string", nil, "like --set, but the value is always a string")
	flags.StringArrayVar(&f.profiles, "profile", nil, "a profile file (docs/profile.md): its defaults under the settings, its imposed values and rules over them; repeat it for one that refines another")
	flags.BoolVar(&f.strict, "strict", false, "treat warnings as errors: render nothing when there is one")
	cmd.RegisterFlagCompletionFunc("set", completeSet)
	cmd.RegisterFlagCompletionFunc("set-string", completeSet)
}

// registerWorkspace registers --workspace, for the commands that ship a
// folder with the job.
func (f *inputFlags) registerWorkspace(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "ship this folder with the job (. for the current one): packed without what .gitignore and "+
		workspace.IgnoreFile+" leave out or looks like a secret, and unpacked into each pod's working folder before setupCommands and mainProgram")
	cmd.MarkFlagDirname("workspace")
}

// pack packs the --workspace folder, once, and says what it packed and
// what it left out as secrets, on standard error; nil without --workspace.
func (f *inputFlags) pack(s Streams) (*workspace.Packed, error) {
	if f.workspace == "" || f.packed != nil {
		return f.packed, nil
	}
	p, err := workspace.Pack(f.workspace)
	var notAFolder workspace.NotAFolder
	if errors.As(err, &notAFolder) {
		return nil, settings.UsageError{Err: err}
	}
	if err != nil {
		return nil, err
	}
	configMaps := "1 ConfigMap"
	if n := p.Parts; n > 1 {
		configMaps = fmt.Sprintf("%d ConfigMaps", n)
	}
	fmt.Fprintf(s.Err, "workspace: %s, %d files (%s), packed into %s (%s)\n",
		p.Folder, p.Files, workspace.Size(p.Bytes), configMaps, p.Short())
	if len(p.Secrets) > 0 {
		fmt.Fprintf(s.Err, "workspace: left out as they look like secrets: %s; to ship one, name it with a ! line in %s (!%s)\n",
			strings.Join(p.Secrets, ", "), workspace.IgnoreFile, p.Secrets[0])
	}
	f.packed = p
	return p, nil
}

// completeSet completes the key of a --set key=value: each key that takes a
// value, with the first item of a list ([0]), followed by = (or by . for a
// map, whose keys are the user's).
func completeSet(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if strings.Contains(toComplete, "=") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	sch, err := schema.Model()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var keys []cobra.Completion
	for _, k := range sch.Keys() {
		if len(k.Fields) > 0 {
			continue
		}
		key, then := strings.ReplaceAll(k.Path, "[]", "[0]"), "="
		if strings.HasPrefix(k.Type, "map of ") {
			then = "."
		}
		keys = append(keys, cobra.CompletionWithDesc(key+then, firstSentence(k.Description)))
	}
	return keys, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// render loads, validates and renders the settings, under the --profile
// files if any, and writes the warnings to standard error; with --strict a
// warning fails the command. It gives the settings as loaded too (under the
// profile), to place later findings in them.
func (f *inputFlags) render(s Streams) (*settings.Input, *render.Result, error) {
	in, err := f.load(s)
	if err != nil {
		return nil, nil, err
	}
	p, err := f.fileProfile()
	if err != nil {
		return nil, nil, err
	}
	return f.renderUnder(s, in, p)
}

// load reads and merges the settings, and starts compiling the validator
// for the render to come.
func (f *inputFlags) load(s Streams) (*settings.Input, error) {
	if len(f.files) == 0 && len(f.sets) == 0 && len(f.setStrings) == 0 {
		return nil, settings.UsageError{Err: errors.New("no settings given; pass a settings file with -f settings.yaml")}
	}
	render.Prepare()
	return settings.Load(settings.Options{Files: f.files, Sets: f.sets, SetStrings: f.setStrings, Stdin: s.In})
}

// renderUnder renders the settings under a profile (nil for none), and says
// which profile it applied, once.
func (f *inputFlags) renderUnder(s Streams, in *settings.Input, p *profile.Profile) (*settings.Input, *render.Result, error) {
	if p != nil {
		var err error
		if in, err = p.Apply(in); err != nil {
			return nil, nil, err
		}
		if !f.profileSaid {
			fmt.Fprintf(s.Err, "profile: %s\n", p.Name())
			f.profileSaid = true
		}
	}
	ws, err := f.pack(s)
	if err != nil {
		return nil, nil, err
	}
	result, err := render.Render(in, p, ws)
	if err != nil {
		return nil, nil, err
	}
	return in, result, f.strictWarnings(result, s.Err)
}

// strictWarnings writes the warnings of a render to w, or with --strict
// returns them as an error.
func (f *inputFlags) strictWarnings(result *render.Result, w io.Writer) error {
	if f.strict && len(result.Warnings) > 0 {
		return strictError{result.Warnings}
	}
	if f.holdWarnings {
		return nil
	}
	for _, p := range result.Warnings {
		fmt.Fprintln(w, p)
	}
	return nil
}

// strictError is the warnings that --strict turned into errors.
type strictError struct{ warnings diag.List }

func (e strictError) Error() string { return e.warnings.Error() }

// outputFlags say where and how render writes manifests.
type outputFlags struct {
	file, dir, format string
}

// resolve checks the output flags and settles the format: --output, else
// the -o file's extension (.json for JSON), else YAML. It refuses a format
// render does not write, an -o that looks like kubectl's -o FORMAT, and an
// --output that the -o file's extension contradicts.
func (o *outputFlags) resolve() error {
	if o.format != "" && o.format != "yaml" && o.format != "json" {
		return settings.UsageError{Err: fmt.Errorf("--output %s is not an output format; use yaml or json", o.format)}
	}
	if o.file == "yaml" || o.file == "json" {
		return settings.UsageError{Err: fmt.Errorf("-o names the output file, and %s has no extension: for the format, use --output %s; for a file, use -o job.%s", o.file, o.file, o.file)}
	}
	ext := filepath.Ext(o.file)
	named := map[string]string{".json": "json", ".yaml": "yaml", ".yml": "yaml"}[strings.ToLower(ext)]
	switch {
	case o.format == "":
		o.format = cmp.Or(named, "yaml")
	case named != "" && named != o.format:
		return settings.UsageError{Err: fmt.Errorf("-o %s names a %s file, and --output %s asks for %s; drop --output %s, or use -o %s",
			o.file, strings.ToUpper(named), o.format, strings.ToUpper(o.format), o.format, strings.TrimSuffix(o.file, ext)+"."+o.format)}
	}
	return nil
}

// encode writes a manifest in the output format: YAML as rendered, or JSON
// as kubectl -o json writes it: the object, or a v1 List of the objects when
// there are several.
func (o outputFlags) encode(manifest []byte) ([]byte, error) {
	if o.format == "yaml" {
		return manifest, nil
	}
	var items []json.RawMessage
	for _, doc := range strings.Split(strings.TrimPrefix(string(manifest), "---\n"), "\n---\n") {
		item, err := sigsyaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("the manifest is not valid YAML; please report this bug: %w", err)
		}
		items = append(items, item)
	}
	var v any = items[0]
	if len(items) > 1 {
		v = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	}
	data, err := json.MarshalIndent(v, "", "  ")
	return append(data, '\n'), err
}

func newRender(s Streams) *cobra.Command {
	var in inputFlags
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "render [settings.yaml] [-f more.yaml]... [--set key=value] [-o FILE] [--output yaml|json] | --out-dir DIR FILE...",
		Short: "Render the settings into an AppWrapper manifest",
		Long: `Render validates the settings and writes the AppWrapper manifest to standard
output, or to the file -o names, as YAML or as JSON (--output json, or an -o
file named .json). The settings are the -f files, merged left to right, then
the settings file given as an argument, then the --set values. On any problem
it writes nothing: an existing output file is left as it was, and standard
output stays empty.

With --out-dir, render renders many settings files in one go, in parallel: each
FILE (after the -f files and --set values, which apply to all) to its path
below the deepest folder that holds all the FILEs, in DIR, with the extension
.yaml (or .json). So jobs/a/settings.yaml and jobs/b/settings.yaml are written
to DIR/a/settings.yaml and DIR/b/settings.yaml, and jobs/c.yaml to DIR/c.yaml;
missing folders are created. A file with problems is reported with its name
and the others are still written; the exit code is 1 if any file failed.

With --workspace, the folder is packed and the manifest starts with the
ConfigMaps that carry it (docs/workspace.md); kubectl apply creates them
before the job.`,
		Example: `  generator render settings.yaml | kubectl apply -f -
  generator render -f base.yaml -f experiment.yaml --set numPods=8 -o job.yaml
  cat settings.yaml | generator render -f -
  generator render -f settings.yaml --output json | jq .spec.components[0].template.spec
  generator render --out-dir manifests/ jobs/*/settings.yaml
  generator render settings.yaml --workspace . -o job.yaml`,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			if err := out.resolve(); err != nil {
				return err
			}
			if out.dir != "" && in.workspace != "" {
				return settings.UsageError{Err: errors.New("--workspace ships one folder with one job, and --out-dir renders many; render the job alone, with -o FILE")}
			}
			if out.dir != "" {
				return in.renderBatch(s, out, args)
			}
			if len(args) > 1 {
				return settings.UsageError{Err: errors.New("several settings files need --out-dir DIR, to render each to a file of its own; to merge them into one job, pass each with -f")}
			}
			in.files = append(in.files, args...)
			_, result, err := in.render(s)
			if err != nil {
				return err
			}
			data, err := out.encode(result.Stream())
			if err != nil {
				return err
			}
			if out.file == "" {
				_, err = s.Out.Write(data)
				return err
			}
			return withFolder(out.file, func() error { return writeFile(out.file, data, true) })
		}),
	}
	in.register(cmd)
	in.registerWorkspace(cmd)
	cmd.Flags().StringVarP(&out.file, "output-file", "o", "", "write the manifest to this file (atomically, creating its folder if need be) instead of standard output; a .json file gets JSON")
	cmd.Flags().StringVar(&out.format, "output", "", "output format: yaml or json (default: json for an -o file named .json, else yaml)")
	cmd.Flags().StringVar(&out.dir, "out-dir", "", "render each FILE argument to a file of its own in this folder")
	cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]cobra.Completion{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// makeFolder creates the folder dir, and the folders above it that are
// missing, and returns the ones it created, each after its parent.
func makeFolder(dir string) ([]string, error) {
	_, err := os.Stat(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil // there, or not to be made: writing into it says why
	}
	var created []string
	if parent := filepath.Dir(dir); parent != dir {
		if created, err = makeFolder(parent); err != nil {
			return created, err
		}
	}
	if err := os.Mkdir(dir, 0o755); errors.Is(err, fs.ErrExist) {
		return created, nil // made meanwhile, by another program
	} else if err != nil {
		return created, err
	}
	return append(created, dir), nil
}

// withFolder runs write, which writes the file path, once the folders that
// are to hold path exist; if write fails, the folders it created are removed
// again.
func withFolder(path string, write func() error) error {
	created, err := makeFolder(filepath.Dir(path))
	if err != nil {
		err = fmt.Errorf("cannot write %s: %w", path, ioCause(err))
	} else {
		err = write()
	}
	if err != nil {
		removeFolders(created)
	}
	return err
}

// ioCause is what went wrong in a file operation, without the operation and
// the path it names, which may be a file of the generator's own, such as a
// temporary file: the caller names the user's file instead.
func ioCause(err error) error {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	switch {
	case errors.As(err, &pathErr):
		return pathErr.Err
	case errors.As(err, &linkErr):
		return linkErr.Err
	}
	return err
}

// removeFolders removes again the folders makeFolder created that are
// still empty, and returns the ones it kept.
func removeFolders(created []string) (kept []string) {
	for i := len(created) - 1; i >= 0; i-- {
		if os.Remove(created[i]) != nil {
			kept = append(kept, created[i])
		}
	}
	return kept
}

// writeFile replaces path with data in one step: a reader sees the old file
// or the new one, never a part, and a failure leaves the old file alone. An
// existing file keeps its permissions, and is left untouched (time stamps
// too) when it holds data already. With durable, the data is on disk before
// the new file takes the old one's place; without, the caller syncs.
func writeFile(path string, data []byte, durable bool) (err error) {
	mode := os.FileMode(0o644)
	if info, statErr := os.Stat(path); statErr == nil {
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file; choose another output file", path)
		}
		if info.Size() == int64(len(data)) {
			if old, readErr := os.ReadFile(path); readErr == nil && bytes.Equal(old, data) {
				return nil
			}
		}
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, ioCause(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("cannot write %s: %w", path, ioCause(err))
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if durable {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
