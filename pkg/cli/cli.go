// Package cli is the generator's command line. Commands write only to the
// writers they are given, so tests run them in-process.
package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitInvalid = 1 // the settings are invalid, or writing the output failed
	ExitUsage   = 2 // the command line is wrong
	ExitCluster = 3 // the cluster cannot be reached (check, submit, status)
	// ExitStopped is for Ctrl-C, as a shell reports a program that SIGINT
	// ended (128 + 2): submit --wait stopped following the job.
	ExitStopped = 130
)

// consequence is the annotation of a command that says what a failure
// meant, as in "3 problems in the settings; nothing was rendered".
const consequence = "consequence"

// Streams are a command's standard input, output and error.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Run runs the generator with args (without the program name) and returns the
// exit code. Nothing is written to Out unless the command succeeds.
func Run(args []string, s Streams) (code int) {
	defer cluster.EndAPILog()
	defer func() {
		// A bug must not show the user a Go stack trace: say what happened.
		if r := recover(); r != nil {
			fmt.Fprintf(s.Err, "Error: internal error: %v\nThis is a bug in the generator; please report it with the command and settings that caused it.\n", r)
			code = ExitInvalid
		}
	}()
	root := newRoot(s)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var usage settings.UsageError
	var failed runError
	var interrupted stopped
	switch {
	case errors.As(err, &usage):
		// Wrong arguments or files: the message says what to do.
		fmt.Fprintf(s.Err, "Error: %v\n", err)
		return ExitUsage
	case !errors.As(err, &failed):
		// cobra's own errors: an unknown command or flag, a missing argument.
		fmt.Fprintf(s.Err, "Error: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return ExitUsage
	case unreachable(err):
		fmt.Fprintf(s.Err, "Error: %v\n", err)
		return ExitCluster
	case errors.As(err, &interrupted):
		fmt.Fprintln(s.Err, interrupted)
		return ExitStopped
	}
	writeError(s, err, cmp.Or(cmd.Annotations[consequence], "nothing was rendered"))
	return ExitInvalid
}

// writeError explains why something was not rendered: the problems in the
// settings, the warnings --strict made errors, or what else went wrong.
// consequence says what it meant, such as "nothing was rendered".
func writeError(s Streams, err error, consequence string) {
	var problems diag.List
	var strict strictError
	var findings findingsError
	var refused importRefused
	var invalidProfile profile.Invalid
	switch {
	case errors.As(err, &findings):
		fmt.Fprintln(s.Err, findings)
	case errors.As(err, &refused):
		fmt.Fprintln(s.Err, refused)
	case errors.As(err, &invalidProfile):
		for _, p := range invalidProfile.Problems {
			fmt.Fprintln(s.Err, p)
		}
		fmt.Fprintf(s.Err, "%s in the profile, which whoever keeps it must fix (generator profile validate checks it); %s\n", schema.Count(len(invalidProfile.Problems), "problem"), consequence)
	case errors.As(err, &problems):
		for _, p := range problems {
			fmt.Fprintln(s.Err, p)
		}
		fmt.Fprintf(s.Err, "%s in the settings; %s\n", schema.Count(len(problems), "problem"), consequence)
	case errors.As(err, &strict):
		for _, w := range strict.warnings {
			fmt.Fprintln(s.Err, w)
		}
		fmt.Fprintf(s.Err, "%s, and --strict makes them errors; %s\n", schema.Count(len(strict.warnings), "warning"), consequence)
	default:
		fmt.Fprintf(s.Err, "Error: %v\n", err)
	}
}

// runError marks an error returned by a command's own work, as opposed to one
// cobra returns for a malformed command line.
type runError struct{ error }

func (e runError) Unwrap() error { return e.error }

// run adapts a command body so that its errors are told apart from cobra's.
func run(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := f(cmd, args); err != nil {
			return runError{err}
		}
		return nil
	}
}

func newRoot(s Streams) *cobra.Command {
	var version bool
	root := &cobra.Command{
		Use:   "generator",
		Short: "Turn a short settings.yaml into a distributed PyTorch job for Kueue, and run it",
		Long: `generator turns a short settings.yaml into a distributed PyTorch training job,
ready for Kueue: a Kubeflow PyTorchJob (the default), a JobSet, or T9k's
PyTorchTrainingJob or DeepSpeedJob, each wrapped in an AppWrapper, or a bare
Kubeflow Trainer v2 TrainJob. Then it takes the job through its life on the
cluster: check it before it is submitted, submit it and wait for its end,
follow its status and every rank's logs, list the jobs, stop, resume and
delete one.

It succeeds the MLBatch pytorchjob-generator Helm chart: a settings file that
chart rendered gives the same objects, unless it holds a setting that
docs/mlbatch.md lists as refused, with its fix. The chart it embeds also works on its own with
helm template. Jobs written by hand come over with import. A platform team
gives every job of its cluster defaults, imposed values and rules with a
profile, which the API server enforces too (generator profile).`,
		Example: `  generator init                                   # a starter settings.yaml
  generator explain numGpusPerPod                  # what a key means
  generator render -f settings.yaml | kubectl apply -f -
  generator run --local -f settings.yaml           # try it here first
  generator check -f settings.yaml                 # would the cluster take it?
  generator submit --wait -f settings.yaml         # submit, then follow it to its end
  generator logs -f NAME                           # every rank's logs
  generator import pytorchjob.yaml                 # a job written by hand, as settings`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if version {
				return writeVersion(s.Out)
			}
			return cmd.Help()
		}),
	}
	root.Flags().BoolVar(&version, "version", false, "print the versions, as generator version does")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(newInit(s), newRender(s), newValidate(s), newRun(s), newCheck(s), newSubmit(s), newStatus(s), newLogs(s), newList(s),
		newStop(s), newResume(s), newDelete(s), newAccess(s), newImport(s), newProfile(s), newExplain(s), newSchema(s), newVersion(s))

	// cobra's own help and completion commands, with examples like the others.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		switch cmd.Name() {
		case "help":
			cmd.Example = "  generator help render"
		case "completion":
			cmd.Example = "  source <(generator completion bash)"
			for _, shell := range cmd.Commands() {
				shell.Example = completionExamples[shell.Name()]
			}
			// Runnable, so that cobra checks its arguments: a shell it does
			// not know is an error, not completion's help and exit code 0.
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	return root
}

// completionExamples load the completion of each shell, for the session.
var completionExamples = map[string]string{
	"bash":       "  source <(generator completion bash)",
	"zsh":        "  source <(generator completion zsh)",
	"fish":       "  generator completion fish | source",
	"powershell": "  generator completion powershell | Out-String | Invoke-Expression",
}
