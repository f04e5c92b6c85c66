package cli

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/settings"
)

func newLogs(s Streams) *cobra.Command {
	var job jobFlags
	var req cluster.LogRequest
	var rank int
	var tail int64
	cmd := &cobra.Command{
		Use:   "logs NAME [-n NAMESPACE] | logs --values settings.yaml [--role ROLE | --rank N] [-c CONTAINER] [-f]",
		Short: "Show the logs of all the pods of a submitted job",
		Long: `Logs shows the logs of the job's pods, every line after the pod's role and
index in the job, as [master-0] or [worker-1] (a JobSet's and a TrainJob's
[node-3]; a T9k job's from its pods' names, as T9k documents no labels for
them), aligned, and coloured on a terminal (not with NO_COLOR). The lines of
several pods come as they arrive.

--role worker reads the workers' logs alone, --role worker-1 one pod's;
--rank 2 the pod of node rank 2 (the torchrun node rank: the master is 0, a
PyTorchJob's worker i is i+1). -c reads another container than the training
container, an init container too.

-f follows the logs until the job finishes: across restarts of its
containers, and across an AppWrapper's retry, whose new pods it says it
follows. When no pod has a log yet, it says why in one line (queued, with
Kueue's reason and position; a pod that cannot be scheduled, an image that
cannot be pulled), and with -f waits for them.

Name the job as status does, or give its settings with --values (-f is
--follow here, as in kubectl logs).

Exit codes: 0 when the logs were shown (with -f, when the job succeeded), 1
when there is no such job, you may not read its pods or their logs, or (with
-f) the job failed, 2 for a wrong command line, 3 when the cluster cannot be
reached, 130 when Ctrl-C stopped following.`,
		Example: `  generator logs llama-8b -n team-a
  generator logs llama-8b --role worker-1 --tail 100
  generator logs llama-8b -f --rank 0 --timestamps
  generator logs --values settings.yaml -c setup`,
		Annotations: map[string]string{consequence: "no logs were read"},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			switch {
			case req.Previous && req.Follow:
				return settings.UsageError{Err: errors.New("--previous reads the log of a container that has ended, which cannot be followed; drop -f or --previous")}
			case flags.Changed("rank") && rank < 0:
				return settings.UsageError{Err: fmt.Errorf("--rank %d: a node rank is 0 or more", rank)}
			case tail < -1:
				return settings.UsageError{Err: fmt.Errorf("--tail %d: give the number of last lines to show, or -1 for all", tail)}
			case req.Since < 0:
				return settings.UsageError{Err: fmt.Errorf("--since %v: give how far back to start, as 10m or 2h", req.Since)}
			}
			if flags.Changed("rank") {
				req.Rank = &rank
			}
			if tail >= 0 {
				req.Tail = &tail
			}
			ctx := cmd.Context()
			client, ref, err := job.find(ctx, s, args)
			if err != nil {
				return err
			}
			req.Ref = ref
			if req.Follow {
				var stop context.CancelFunc
				ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
				defer stop()
			}
			return showLogs(ctx, s, client, req, terminalWidth(s.Out) > 0 && os.Getenv("NO_COLOR") == "")
		}),
	}
	flags := cmd.Flags()
	flags.StringVar(&req.Role, "role", "", "the pods of a role (master, worker, node), or one pod by role and index (worker-1)")
	flags.IntVar(&rank, "rank", 0, "the pod of that node rank (torchrun's: the master is 0)")
	flags.StringVarP(&req.Container, "container", "c", "", "the container to read, an init container too (default: the training container)")
	flags.BoolVarP(&req.Follow, "follow", "f", false, "follow the logs until the job finishes, across restarts and retries")
	flags.BoolVar(&req.Previous, "previous", false, "the logs of the containers' previous runs, those that ended before a restart")
	flags.Int64Var(&tail, "tail", -1, "the last lines of each log only (-1: all)")
	flags.DurationVar(&req.Since, "since", 0, "the lines of that last while only, as 10m or 2h (0: all)")
	flags.BoolVar(&req.Timestamps, "timestamps", false, "each line with its time, as the kubelet saw it")
	// After --role, whose completion it registers.
	job.register(cmd, "")
	return cmd
}

// showLogs writes the job's logs to standard output, each line after its
// pod's label, and what happens besides to standard error. Following, it
// fails when the job failed, as submit --wait does.
func showLogs(ctx context.Context, s Streams, client *cluster.Client, req cluster.LogRequest, color bool) error {
	w := logWriter{w: s.Out, color: color}
	last, err := client.Logs(ctx, req, w.line, func(note string) { fmt.Fprintln(s.Err, note) })
	switch {
	case errors.Is(err, context.Canceled):
		return stopped{fmt.Sprintf("stopped following the logs of the %s (%s); the job goes on", req.Ref, seen(last))}
	case err != nil:
		return err
	case !req.Follow:
		return nil
	}
	fmt.Fprintln(s.Err, last.Line())
	if last.State == cluster.Failed {
		return fmt.Errorf("the %s failed; see it with %s", req.Ref, statusCommand(req.Ref))
	}
	return nil
}

// logWriter writes a pod's log lines after its label, [worker-1], padded
// to the widest label so that the lines align; coloured on a terminal.
type logWriter struct {
	w     io.Writer
	color bool
}

// colours are the ANSI foreground colours of the labels: red, green,
// yellow, blue, magenta, cyan.
var colours = []int{31, 32, 33, 34, 35, 36}

func (l logWriter) line(line cluster.LogLine) {
	label := "[" + line.Label + "]"
	pad := strings.Repeat(" ", max(line.Width-len(line.Label), 0))
	if l.color {
		n := line.Member.Rank
		if line.Label != line.Member.String() {
			h := fnv.New32a()
			h.Write([]byte(line.Label))
			n = int(h.Sum32() % uint32(len(colours)))
		}
		label = fmt.Sprintf("\x1b[%dm%s\x1b[0m", colours[n%len(colours)], label)
	}
	fmt.Fprintf(l.w, "%s%s %s\n", label, pad, line.Text)
}
