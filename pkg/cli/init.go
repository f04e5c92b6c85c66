package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// kinds are the job kinds, from the schema.
func kinds(s *schema.Schema) []string {
	var names []string
	for _, v := range s.Properties.Get("jobKind").Resolved().Enum {
		names = append(names, fmt.Sprint(v))
	}
	return names
}

// schemaURL is where the editor schema of this chart version is to be
// published (what generator schema prints): the file in the repository at the
// release's tag. init --schema online names it.
func schemaURL(version string) string {
	return "https://raw.githubusercontent.com/torchwrap/generator/v" + version + "/schema/editor.schema.json"
}

// localSchema is the name of the editor schema that init writes beside a
// settings file, which its modeline names: one per version, so that files
// written by different versions keep their own.
func localSchema(version string) string {
	return "generator-" + version + ".schema.json"
}

// writeSchemaBeside writes the editor schema at path, unless the same schema is
// there already; a different file of that name is left alone and refused.
func writeSchemaBeside(path string) error {
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, schema.EditorJSON):
		return nil
	case err == nil:
		return fmt.Errorf("%s exists already and is not this version's schema, and init does not overwrite files; remove it, or name it with --schema %s to keep it", path, filepath.Base(path))
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot read %s: %w", path, ioCause(err))
	}
	return createFile(path, schema.EditorJSON)
}

func newInit(s Streams) *cobra.Command {
	var kind, schemaRef string
	var profiles []string
	var kube cluster.Flags
	cmd := &cobra.Command{
		Use:   "init [--kind KIND] [FILE]",
		Short: "Write a commented starter settings.yaml",
		Long: `Init writes a starter settings file (settings.yaml, or FILE; - for standard
output) for a job of the given kind: the keys a first job needs, set, and common
optional ones as commented examples, each with its description. It validates as
is. Its first line is a yaml-language-server modeline that points editors (VS
Code with the YAML extension, Neovim, Helix, ...) at the schema of settings files,
so that they complete and check the keys as you type, offline: init writes that
schema (what generator schema prints) beside FILE, as generator-VERSION.schema.json,
unless the same file is there already. --schema names another schema instead and
writes none: a path or URL, or online for the copy published with this version.

Init starts from your cluster's profile (generator profile), when your
kubeconfig reaches a cluster that has one: the keys the profile gives values
are written as comments with those values, and what it says of a key (its
default, its imposed value, its rules) is said above it. It says which
profile it started from, or why none. --profile FILE starts from a profile
file instead, without asking the cluster.

Init creates the folder of FILE if need be, and never overwrites a file: choose
another name, or remove the old file first.`,
		Example: `  generator init
  generator init --kind PyTorchTrainingJob training/settings.yaml
  generator init --schema online
  generator init -n team-a --context lab-a
  generator init --profile lab.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			sch, err := schema.Model()
			if err != nil {
				return err
			}
			if all := kinds(sch); !slices.Contains(all, kind) {
				var lower []string
				for _, k := range all {
					lower = append(lower, strings.ToLower(k))
				}
				if guess := schema.Closest(kind, all, lower); guess != "" {
					return settings.UsageError{Err: fmt.Errorf("--kind %s is not a job kind; did you mean %s? (the kinds are %s)", kind, guess, strings.Join(all, ", "))}
				}
				return settings.UsageError{Err: fmt.Errorf("--kind %s is not a job kind; use one of %s", kind, strings.Join(all, ", "))}
			}
			file := "settings.yaml"
			if len(args) > 0 {
				file = args[0]
			}
			name := file
			if file == "-" {
				name = "settings.yaml"
			}
			m, err := chartfiles.Metadata()
			if err != nil {
				return err
			}
			beside := schemaRef == ""
			switch {
			case beside:
				schemaRef = localSchema(m.Version)
			case schemaRef == "online":
				schemaRef = schemaURL(m.Version)
			}
			p, err := initProfile(cmd.Context(), s, profiles, &kube)
			if err != nil {
				return err
			}
			text, err := starter(sch, kind, schemaRef, name, p)
			if err != nil {
				return err
			}
			if file == "-" {
				if _, err := s.Out.Write(text); err != nil || !beside {
					return err
				}
				_, err = fmt.Fprintf(s.Err, "its modeline names %s: write it beside the file with generator schema > %s\n", schemaRef, schemaRef)
				return err
			}
			schemaFile := filepath.Join(filepath.Dir(file), schemaRef)
			err = withFolder(file, func() error {
				if err := createFile(file, text); err != nil || !beside {
					return err
				}
				if err := writeSchemaBeside(schemaFile); err != nil {
					os.Remove(file)
					return err
				}
				return nil
			})
			if err != nil {
				return err
			}
			if beside {
				_, err = fmt.Fprintf(s.Err, "wrote %s, %s, and beside it %s, the schema its first line names for editors; render it with: generator render -f %s\n", file, cluster.Indefinite(kind), schemaRef, file)
			} else {
				_, err = fmt.Fprintf(s.Err, "wrote %s, %s; render it with: generator render -f %s\n", file, cluster.Indefinite(kind), file)
			}
			return err
		}),
	}
	cmd.Flags().StringVar(&kind, "kind", "PyTorchJob", "job kind: PyTorchJob, PyTorchTrainingJob or DeepSpeedJob")
	cmd.Flags().StringVar(&schemaRef, "schema", "", "path or URL of the schema the modeline names, or online for this version's published copy; none is written (default: the schema, written beside FILE)")
	cmd.Flags().StringArrayVar(&profiles, "profile", nil, "start from this profile file, not the cluster's; repeat it for one that refines another")
	kube.Register(cmd.Flags())
	cmd.RegisterFlagCompletionFunc("kind", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		sch, err := schema.Model()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return kinds(sch), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// initTimeout bounds the questions init asks the cluster: a starter is not
// worth a long wait for a cluster that does not answer.
const initTimeout = 5 * time.Second

// initProfile is the profile a starter starts from: the files given, else
// the cluster's for the namespace of -n (or the context's) when the
// kubeconfig reaches one. It says which, or why none, in one line on
// standard error.
func initProfile(ctx context.Context, s Streams, files []string, kube *cluster.Flags) (*profile.Profile, error) {
	if len(files) > 0 {
		p, err := loadProfile(files)
		if err == nil {
			fmt.Fprintf(s.Err, "profile: %s; the starter gives its values, in comments\n", p.Name())
		}
		return p, err
	}
	ctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	client, err := dial(quiet, kube)
	var read profileRead
	if err == nil {
		read, err = clusterProfile(ctx, client, client.Namespace)
	}
	p, unread := read.profile, read.unread
	if len(read.denied) > 0 {
		unread = append(unread, read.unknown())
	}
	var invalid profile.Invalid
	var usage settings.UsageError
	switch {
	case errors.As(err, &invalid), errors.As(err, &usage):
		return nil, err
	case err != nil:
		fmt.Fprintf(s.Err, "profile: none read, the starter has the chart's defaults: %v\n", err)
		return nil, nil
	}
	if p != nil {
		if problems := p.Problems(); len(problems) > 0 {
			return nil, profile.Invalid{Problems: problems}
		}
	}
	switch {
	case len(unread) > 0:
		sayUnread(s, unread, p)
	case p == nil:
		fmt.Fprintf(s.Err, "profile: none on the cluster at %s for namespace %s; the starter has the chart's defaults\n", client.Server, client.Namespace)
	default:
		fmt.Fprintf(s.Err, "profile: %s; the starter gives its values, in comments\n", p.Name())
	}
	return p, nil
}

// createFile writes a new file; an existing one is left alone and refused.
func createFile(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists already, and init does not overwrite files; name another file, or remove it first", path)
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, ioCause(err))
	}
	defer func() {
		if closeErr := f.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			os.Remove(path)
			err = fmt.Errorf("cannot write %s: %w", path, ioCause(err))
		}
	}()
	_, err = f.Write(data)
	return err
}
