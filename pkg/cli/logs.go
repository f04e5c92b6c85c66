package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/failure"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

func newLogs(s Streams) *cobra.Command {
	var job jobFlags
	var req cluster.LogRequest
	var rank, attempt int
	var tail int64
	var outage time.Duration
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
cannot be pulled), and with -f waits for them. Following, it says each
failure of a pod as it happens, on standard error: the attempt, the pod's
role, the container, how it ended, and the lines of its log that say why
(the rank torchrun found failing first, and its traceback), and keeps them
on this machine. When the cluster cannot be reached, -f says so once and
goes on trying for --outage; once the cluster answers again, each log is
taken up where it stopped, no line lost or said twice, and a pod that
replaced another meanwhile from its start.

--attempt N prints what was kept of attempt N (1 for the first run, 2 after
the first retry) once its pods are gone: the last lines of each pod that
failed in it, as seen by submit --wait, logs -f or status while it failed.
Without it, the logs of a finished job whose pods are gone are the last
attempt's kept lines, which say why it ended as it did, after a line that
names the attempts kept.

Name the job as status does, or give its settings with --values (-f is
--follow here, as in kubectl logs).

Exit codes: 0 when the logs were shown (with -f, when the job succeeded), 1
when there is no such job, you may not read its pods or their logs, or (with
-f) the job failed, 2 for a wrong command line, 3 when the cluster cannot be
reached (with -f, for longer than --outage), 130 when Ctrl-C stopped
following.`,
		Example: `  generator logs llama-8b -n team-a
  generator logs llama-8b --role worker-1 --tail 100
  generator logs llama-8b -f --rank 0 --timestamps
  generator logs --values settings.yaml -c setup
  generator logs llama-8b --attempt 1`,
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
			case flags.Changed("attempt") && attempt < 1:
				return settings.UsageError{Err: fmt.Errorf("--attempt %d: the attempts are counted from 1, the first run", attempt)}
			case flags.Changed("attempt") && (req.Follow || req.Previous || req.Since > 0 || req.Timestamps || req.Container != "" || flags.Changed("rank")):
				return settings.UsageError{Err: errors.New("--attempt prints the lines kept of an attempt's failed pods, by --role alone, without -f, --previous, --since, --timestamps, -c or --rank; drop them, or drop --attempt")}
			}
			if err := checkOutage(cmd, outage, req.Follow, "-f"); err != nil {
				return err
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
			client.Outage = outage
			if flags.Changed("attempt") {
				return showKept(ctx, s, client, req, attempt)
			}
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
	flags.IntVar(&attempt, "attempt", 0, "the lines kept of the pods that failed in that attempt (1 is the first run), after its pods are gone")
	registerOutage(cmd, &outage, "-f")
	// After --role, whose completion it registers.
	job.register(cmd, "")
	return cmd
}

// showKept writes what was kept of an attempt of the job: the last lines of
// each pod that failed in it (those of --role or --rank), after its label,
// and the attempt's headline on standard error.
func showKept(ctx context.Context, s Streams, client *cluster.Client, req cluster.LogRequest, n int) error {
	story, err := client.Kept(ctx, req.Ref)
	if err != nil {
		return err
	}
	a, ok := story.Attempt(n)
	if !ok {
		kept := "nothing was kept of any attempt"
		if len(story.Attempts) > 0 {
			kept = "what was kept is of " + attempts(story)
		}
		return fmt.Errorf("nothing was kept of attempt %d of the %s on this machine (%s): %s", n, req.Ref, kept, keptOnly)
	}
	writeKept(s, req, a)
	return nil
}

// keptOnly says what is kept of a job's failed pods.
const keptOnly = "only what generator submit --wait, logs -f and status saw while its pods were there is kept"

// attempts names the attempts kept of a job: "attempts 1 and 2".
func attempts(story failure.Story) string {
	numbers := make([]string, len(story.Attempts))
	for i, a := range story.Attempts {
		numbers[i] = fmt.Sprint(a.Number)
	}
	if len(numbers) == 1 {
		return "attempt " + numbers[0]
	}
	return "attempts " + schema.AndList(numbers)
}

// showGone says what is left of a finished job whose pods are gone: the
// attempts kept on this machine, each with the command that prints it,
// and the last one's lines, which say why the job ended as it did.
func showGone(ctx context.Context, s Streams, client *cluster.Client, req cluster.LogRequest) error {
	story, err := client.Kept(ctx, req.Ref)
	if err != nil {
		return err
	}
	if len(story.Attempts) == 0 {
		fmt.Fprintf(s.Err, "nothing of its pods was kept on this machine (%s); %s says what the cluster still tells\n", keptOnly, statusCommand(req.Ref))
		return nil
	}
	last := story.Attempts[len(story.Attempts)-1]
	others := ""
	if len(story.Attempts) > 1 {
		others = fmt.Sprintf("; generator logs %s -n %s --attempt N prints attempt N", req.Ref.Name, req.Ref.Namespace)
	}
	fmt.Fprintf(s.Err, "kept on this machine: the failed pods of %s; the last lines of attempt %d follow%s\n", attempts(story), last.Number, others)
	writeKept(s, req, last)
	return nil
}

// writeKept writes an attempt's headline on standard error, then the lines
// kept of each of its failed pods that the request selects.
func writeKept(s Streams, req cluster.LogRequest, a failure.Attempt) {
	fmt.Fprintln(s.Err, a.Headline())
	w := logWriter{w: s.Out}
	width := 0
	for _, f := range a.Failures {
		width = max(width, len(label(f)))
	}
	for _, f := range a.Failures {
		if !req.SelectsMember(f.Member) {
			continue
		}
		lines := f.Lines
		if req.Tail != nil {
			lines = lines[max(0, len(lines)-int(*req.Tail)):]
		}
		for _, text := range lines {
			w.line(cluster.LogLine{Pod: f.Pod, Label: label(f), Text: text, Width: width})
		}
	}
}

// label names a failed pod as logs does: its member, else its name.
func label(f failure.Failure) string {
	if f.Member != "" {
		return f.Member
	}
	return f.Pod
}

// showLogs writes the job's logs to standard output, each line after its
// pod's label, and what happens besides to standard error. Following, it
// fails when the job failed, as submit --wait does.
func showLogs(ctx context.Context, s Streams, client *cluster.Client, req cluster.LogRequest, color bool) error {
	out := flushing(s.Out)
	w := logWriter{w: out, color: color}
	printed := false
	last, err := client.Logs(ctx, req, func(l cluster.LogLine) { printed = true; out.write(func() { w.line(l) }) }, func(note string) { fmt.Fprintln(s.Err, note) },
		func(n cluster.Noticed) { fmt.Fprintln(s.Err, noticed(n)) })
	out.stop()
	switch {
	case errors.Is(err, context.Canceled):
		return stopped{fmt.Sprintf("stopped following the logs of the %s (%s); the job goes on", req.Ref, seen(last))}
	case err != nil:
		return err
	case !req.Follow && !printed && last.State.Finished():
		return showGone(ctx, s, client, req)
	case !req.Follow:
		return nil
	}
	fmt.Fprintln(s.Err, last.Line())
	switch {
	case last.State == cluster.Failed:
		return fmt.Errorf("the %s failed; see it with %s", req.Ref, statusCommand(req.Ref))
	case last.Refusal != nil:
		return willNotRun(req.Ref, *last.Refusal)
	}
	return nil
}

// flushed is standard output through a buffer that is flushed a few times
// a second: a thousand pods' logs are millions of lines, each of which
// would otherwise be a write of its own.
type flushed struct {
	mu   sync.Mutex
	buf  *bufio.Writer
	done chan struct{}
	wg   sync.WaitGroup
}

// flushEvery is how long a line waits in the buffer at most.
const flushEvery = 100 * time.Millisecond

func flushing(w io.Writer) *flushed {
	f := &flushed{buf: bufio.NewWriterSize(w, 64*1024), done: make(chan struct{})}
	f.wg.Go(func() {
		tick := time.NewTicker(flushEvery)
		defer tick.Stop()
		for {
			select {
			case <-f.done:
				return
			case <-tick.C:
				f.mu.Lock()
				f.buf.Flush()
				f.mu.Unlock()
			}
		}
	})
	return f
}

func (f *flushed) Write(p []byte) (int, error) { return f.buf.Write(p) }

// write runs what writes to the buffer, between two flushes.
func (f *flushed) write(do func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	do()
}

// stop flushes what is left, and stops flushing.
func (f *flushed) stop() {
	close(f.done)
	f.wg.Wait()
	f.buf.Flush()
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
