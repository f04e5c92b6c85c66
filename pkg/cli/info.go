package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/schema"
)

func newSchema(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON schema of settings.yaml",
		Long: `Schema prints the JSON schema (draft-07) that settings are checked against;
editors and other tools can use it to check settings files as you type.`,
		Example: `  generator schema > settings.schema.json`,
		Args:    cobra.NoArgs,
		RunE: run(func(*cobra.Command, []string) error {
			_, err := s.Out.Write(schema.JSON)
			return err
		}),
	}
}

func newVersion(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the versions of the generator and of its chart",
		Example: `  generator version`,
		Args:    cobra.NoArgs,
		RunE: run(func(*cobra.Command, []string) error {
			c, err := render.Chart()
			if err != nil {
				return err
			}
			version := "(devel)"
			if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
				version = info.Main.Version
			}
			_, err = fmt.Fprintf(s.Out, "generator %s\nchart %s %s (appVersion %s)\n",
				version, c.Metadata.Name, c.Metadata.Version, c.Metadata.AppVersion)
			return err
		}),
	}
}
