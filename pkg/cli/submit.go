package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/failure"
	"github.com/torchwrap/generator/pkg/settings"
)

func newSubmit(s Streams) *cobra.Command {
	var in inputFlags
	var kube cluster.Flags
	var wait, force bool
	var timeout, outage time.Duration
	cmd := &cobra.Command{
		Use:   "submit [settings.yaml] [-f more.yaml]... [--set key=value] [--wait [--timeout 2h]] [--force]",
		Short: "Check the job against the cluster, then submit it",
		Long: `Submit renders the settings and checks the job against the cluster as
generator check does. When nothing stops it, it submits the job to its
namespace by server-side apply (field manager torchwrap-generator).

A job of the same name that has finished (Succeeded or Failed) is deleted
first, with what it made, and replaced. One that has not finished is left
alone, and nothing is submitted, unless --force: then it is deleted first.

With --wait, submit follows the job until it finishes: Queued (with Kueue's
reason, and the position in the LocalQueue when Kueue's visibility API
answers), Admitted, Running (pods ready), then Succeeded or Failed. On a
terminal the status is one line rewritten in place; otherwise a line each
time it changes, on standard error; the last line of a job that succeeded
goes to standard output. Each failure of a pod is said as it happens, on
standard error, before the AppWrapper's reset deletes the pods and their
logs: the attempt, the pod's role, the container, how it ended, the rank
torchrun found failing first with its own error, and the lines of the log
that say why. What it saw is kept on this machine for generator status and
generator logs --attempt. Ctrl-C stops following, not the job: generator
status shows it again. When the cluster cannot be reached (an API server
restarted, a VPN that dropped, a laptop that slept), it says so once and
goes on trying, less and less often, for --outage; once the cluster answers
again, it says so, reads the job anew and follows it on.

With --workspace, the folder is packed (docs/workspace.md) and shipped in
ConfigMaps owned by the job, which go away with it; its pods unpack it into
their working folder before setupCommands and mainProgram.

Exit codes: 0 when the job was submitted (with --wait, when it succeeded), 1
when the check found a problem, a job of that name has not finished, or the
job failed, outlasted --timeout, or its pods are refused for good (the API
server refuses them every time, as its namespace's Pod Security level, a
LimitRange, a webhook or a quota below the job does: the job is left as it
is, and the line says how to delete it), 2 for a wrong command line, 3 when the
cluster cannot be reached (with --wait, for longer than --outage), 130 when
Ctrl-C stopped following.`,
		Example: `  generator submit settings.yaml
  generator submit -f settings.yaml --wait --timeout 2h --outage 1h
  generator submit settings.yaml --force -n team-a
  generator submit settings.yaml --workspace . --wait`,
		Annotations: map[string]string{consequence: "nothing was submitted"},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			if timeout < 0 || (timeout > 0 && !wait) {
				return settings.UsageError{Err: errors.New("--timeout is how long --wait follows the job (0: as long as it takes); add --wait, or drop --timeout")}
			}
			if err := checkOutage(cmd, outage, wait, "--wait"); err != nil {
				return err
			}
			t, err := connect(cmd.Context(), s, &in, &kube, args, "submit")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := t.check(ctx, s, false); err != nil {
				return err
			}
			done, err := t.client.Submit(ctx, t.job, force)
			if err != nil {
				return err
			}
			ref := t.job.Ref()
			if warning := done.SameName(ref); warning != "" {
				for _, w := range t.in.Locate(diag.List{{Severity: diag.Warning, Path: diag.Path{"jobName"}, Message: warning}}) {
					fmt.Fprintln(s.Err, w)
				}
			}
			if !wait {
				_, err := fmt.Fprintf(s.Out, "%s; see how it does with: %s\n", submitted(ref, done), statusCommand(ref))
				return err
			}
			fmt.Fprintf(s.Err, "%s; following it (Ctrl-C stops following, not the job)\n", submitted(ref, done))
			t.client.Outage = outage
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return follow(ctx, s, t.client, ref, timeout)
		}),
	}
	in.register(cmd)
	in.registerWorkspace(cmd)
	kube.Register(cmd.Flags())
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the job until it finishes; exit 0 only when it succeeds")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, how long to follow the job, as 90m or 2h (0: until it finishes); the job goes on after it")
	cmd.Flags().BoolVar(&force, "force", false, "delete a job of the same name that has not finished, and submit this one")
	registerOutage(cmd, &outage, "--wait")
	return cmd
}

// registerOutage adds --outage to a command that follows a job when asked
// to (the flag follow names).
func registerOutage(cmd *cobra.Command, outage *time.Duration, follow string) {
	cmd.Flags().DurationVar(outage, "outage", cluster.DefaultOutage, "with "+follow+", how long to go on through a cluster that cannot be reached, as 30m or 2h, before giving up with exit 3")
}

// checkOutage refuses an --outage that is no duration to wait, or given
// without following (the flag follow names).
func checkOutage(cmd *cobra.Command, outage time.Duration, following bool, follow string) error {
	switch {
	case outage <= 0:
		return settings.UsageError{Err: fmt.Errorf("--outage %v: give how long to go on through a cluster that cannot be reached, as 30m or 2h", outage)}
	case cmd.Flags().Changed("outage") && !following:
		return settings.UsageError{Err: fmt.Errorf("--outage is how long %s goes on through a cluster that cannot be reached; add %s, or drop --outage", follow, follow)}
	}
	return nil
}

// submitted says what Submit did.
func submitted(ref cluster.Ref, done cluster.Submission) string {
	if done.Replaced == "" {
		return "submitted " + ref.String()
	}
	return fmt.Sprintf("submitted %s, in place of the one before it (%s), which was deleted", ref, done.Replaced)
}

// statusCommand is the command that shows the job.
func statusCommand(ref cluster.Ref) string {
	return fmt.Sprintf("generator status %s -n %s", ref.Name, ref.Namespace)
}

// follow follows a submitted job until it finishes, the timeout passes (0:
// none), or ctx is canceled (Ctrl-C). It writes the job's progress to
// standard error, and when it succeeded its last status to standard output.
func follow(ctx context.Context, s Streams, client *cluster.Client, ref cluster.Ref, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	p := progress{w: s.Err, width: terminalWidth(s.Err)}
	last, err := client.Follow(ctx, ref, func(st cluster.Status) {
		// A job that succeeded is said once, on standard output.
		if st.State != cluster.Succeeded {
			p.report(st)
		}
	}, p.notice)
	p.end()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the %s has not finished after %v (%s); it goes on: see how it does with %s", ref, timeout, seen(last), statusCommand(ref))
	case errors.Is(err, context.Canceled):
		return stopped{fmt.Sprintf("stopped following the %s (%s); the job goes on: see how it does with %s", ref, seen(last), statusCommand(ref))}
	case err != nil:
		return err
	case last.State == cluster.Failed:
		return fmt.Errorf("the %s failed; see it with %s", ref, statusCommand(ref))
	case last.Refusal != nil:
		return willNotRun(ref, *last.Refusal)
	}
	_, err = fmt.Fprintln(s.Out, last.Line())
	return err
}

// willNotRun is the error of a follower that ends on a refusal of the
// job's pods that every retry will meet.
func willNotRun(ref cluster.Ref, refusal failure.Failure) error {
	return fmt.Errorf("the %s will not run: %s. It is left as it is; delete it with generator delete %s -n %s, and submit it again once the settings (or the namespace) allow its pods",
		ref, refusal, ref.Name, ref.Namespace)
}

// seen is the last state seen of a followed job.
func seen(last cluster.Status) string {
	if last.State == "" {
		return "not read yet"
	}
	return "last seen " + string(last.State)
}

// stopped is the error of a command that Ctrl-C stopped.
type stopped struct{ message string }

func (e stopped) Error() string { return e.message }
