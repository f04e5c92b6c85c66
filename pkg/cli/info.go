package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/chart"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

func newSchema(s Streams) *cobra.Command {
	var values, ofProfile bool
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON schema of settings.yaml",
		Long: `Schema prints the JSON schema (draft-07) of a settings file as you write it,
for editors and other tools that check settings files as you type: a key that
has a default may be left out. Save it and name it in the first line of a
settings file (generator init --schema does), or in your editor's settings.

With --values it prints instead the schema of the chart's values, which the
generator and Helm check once the settings are merged over the chart's defaults
(the chart's values.schema.json): it requires the keys that have defaults.

With --profile it prints the schema of a profile file (generator profile), for
editors too: name it in a profile's first line as
# yaml-language-server: $schema=profile.schema.json`,
		Example: `  generator schema > settings.schema.json
  generator schema --values > values.schema.json
  generator schema --profile > profile.schema.json`,
		Args: cobra.NoArgs,
		RunE: run(func(*cobra.Command, []string) error {
			doc := schema.EditorJSON
			switch {
			case values && ofProfile:
				return settings.UsageError{Err: errors.New("--values and --profile name two schemas; print one at a time")}
			case values:
				doc = schema.JSON
			case ofProfile:
				doc = schema.ProfileJSON
			}
			_, err := s.Out.Write(doc)
			return err
		}),
	}
	cmd.Flags().BoolVar(&values, "values", false, "print the schema of the chart's values, checked after the defaults are merged")
	cmd.Flags().BoolVar(&ofProfile, "profile", false, "print the schema of a profile file")
	return cmd
}

func newVersion(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of the generator, of its chart, and how it was built",
		Long: `Version prints the generator's module version (a release tag, or a
pseudo-version for a build from a git checkout), the commit it was built from
when known, the Go version and platform, and the embedded chart's version.`,
		Example: `  generator version`,
		Args:    cobra.NoArgs,
		RunE: run(func(*cobra.Command, []string) error {
			return writeVersion(s.Out)
		}),
	}
}

// writeVersion writes what version (and --version) prints.
func writeVersion(w io.Writer) error {
	c, err := chartfiles.Metadata()
	if err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("this binary carries no build information")
	}
	_, err = io.WriteString(w, versionText(info, c))
	return err
}

// versionText writes what version prints, from the binary's build
// information and the chart's metadata.
func versionText(info *debug.BuildInfo, chart *chart.Metadata) string {
	setting := map[string]string{}
	for _, kv := range info.Settings {
		setting[kv.Key] = kv.Value
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	text := fmt.Sprintf("generator %s\n", version)
	if commit := setting["vcs.revision"]; commit != "" {
		if setting["vcs.modified"] == "true" {
			commit += ", with uncommitted changes"
		}
		if when := setting["vcs.time"]; when != "" {
			commit += ", committed " + when
		}
		text += fmt.Sprintf("commit    %s\n", commit)
	}
	text += fmt.Sprintf("go        %s %s/%s\n", info.GoVersion, setting["GOOS"], setting["GOARCH"])
	text += fmt.Sprintf("chart     %s %s, appVersion %s\n", chart.Name, chart.Version, chart.AppVersion)
	return text
}
