package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidate(s Streams) *cobra.Command {
	var in inputFlags
	cmd := &cobra.Command{
		Use:   "validate -f settings.yaml [-f more.yaml] [--set key=value]",
		Short: "Check the settings without writing a manifest",
		Long: `Validate checks the settings as render does, and prints one line when they
are valid, or every problem found, each with its file, line and column.`,
		Example: `  generator validate -f settings.yaml`,
		Args:    cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			result, err := in.render(s)
			if err != nil {
				return err
			}
			v := result.Values
			_, err = fmt.Fprintf(s.Out, "OK: %s %s with %v pod(s)\n", v["jobKind"], v["jobName"], v["numPods"])
			return err
		}),
	}
	in.register(cmd.Flags())
	return cmd
}
