package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/settings"
)

func newValidate(s Streams) *cobra.Command {
	var in inputFlags
	cmd := &cobra.Command{
		Use:   "validate [settings.yaml] [-f more.yaml]... [--set key=value]",
		Short: "Check the settings without writing a manifest",
		Long: `Validate checks the settings as render does, and prints one line when they
are valid, or every problem found, each with its file, line and column. The
settings are the -f files, merged left to right, then the settings file given
as an argument, then the --set values.`,
		Example: `  generator validate settings.yaml
  generator validate -f base.yaml -f experiment.yaml --set numPods=8`,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return settings.UsageError{Err: errors.New("validate checks one job: pass one settings file, or merge several with -f, as in: -f base.yaml -f job.yaml")}
			}
			in.files = append(in.files, args...)
			_, result, err := in.render(s)
			if err != nil {
				return err
			}
			v := result.Values
			_, err = fmt.Fprintf(s.Out, "OK: %s %s with %v pod(s)\n", v["jobKind"], v["jobName"], v["numPods"])
			return err
		}),
	}
	in.register(cmd)
	return cmd
}
