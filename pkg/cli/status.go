package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/settings"
)

func newStatus(s Streams) *cobra.Command {
	var job jobFlags
	var output string
	cmd := &cobra.Command{
		Use:   "status NAME [-n NAMESPACE] | status -f settings.yaml [-o json]",
		Short: "Show how a submitted job is doing",
		Long: `Status shows how a submitted job is doing, as submit --wait follows it:
Queued (with Kueue's reason, and the position in the LocalQueue when Kueue's
visibility API answers; when Kueue preempted it, the job that took its place
and that job's priority), Admitted, Running (pods ready), Succeeded, Failed;
with its LocalQueue, ClusterQueue and Kueue Workload, and what keeps its pods
from starting.

A failed job, or one retrying after a failure, says why first: the root cause
of its last attempt (the rank torchrun found failing first, its pod's role,
and its error; an out-of-memory kill, an image that cannot be pulled, a node
lost, a setup command that failed), with the lines of its log that say so;
then its earlier attempts. What submit --wait, logs -f and status saw while
the pods were there is kept on this machine (in your cache folder, for you
alone), so status tells it after the pods are gone; an attempt nobody saw is
named once, with how to keep the next.

Name the job, or give its settings as to submit: status NAME looks in the
namespace of -n (else your context's) for a job of that name of every kind;
when jobs of two kinds have it, name one as KIND/NAME, as kubectl does
(pytorchjob/llama-8b). -o json writes the same as one JSON object.

Exit codes: 0 when the status was shown, whatever it is, 1 when there is no
such job or the settings are invalid, 2 for a wrong command line, 3 when the
cluster cannot be reached.`,
		Example: `  generator status llama-8b -n team-a
  generator status -f settings.yaml -o json`,
		Annotations: map[string]string{consequence: "no job was looked for"},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" {
				return settings.UsageError{Err: errors.New("-o json is the one output format; leave -o out for text")}
			}
			client, ref, err := job.find(cmd.Context(), s, args)
			if err != nil {
				return err
			}
			return showStatus(cmd.Context(), s, client, ref, output)
		}),
	}
	job.register(cmd, "f")
	cmd.Flags().StringVarP(&output, "output", "o", "", "json: write the status as a JSON object")
	return cmd
}

// showStatus writes the status of a job: a few lines, or JSON.
func showStatus(ctx context.Context, s Streams, client *cluster.Client, ref cluster.Ref, output string) error {
	status, err := client.Status(ctx, ref)
	if err != nil {
		return err
	}
	if output == "json" {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(status)
	}
	_, err = io.WriteString(s.Out, status.Lines())
	return err
}
