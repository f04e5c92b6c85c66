package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/cluster/preflight"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/failure"
	"github.com/torchwrap/generator/pkg/settings"
)

// target is a rendered job and the cluster it is meant for.
type target struct {
	in       *settings.Input
	values   map[string]any
	warnings diag.List // the render's, written with the cluster's findings
	client   *cluster.Client
	job      *cluster.Job
	// denied are the reads the user's role kept from connect (the
	// cluster's profile), for check to say with its own.
	denied cluster.Denied
}

// connect reads the settings (the -f files, then the one argument) and the
// kubeconfig, places the job in its namespace (the settings' namespace,
// else -n, else the context's), and renders it under the profile: the
// --profile files, else the cluster's for that namespace. Settings and -n
// that name two namespaces are refused, as kubectl refuses an object of
// another namespace.
func connect(ctx context.Context, s Streams, in *inputFlags, kube *cluster.Flags, args []string, what string) (*target, error) {
	if len(args) > 1 {
		return nil, settings.UsageError{Err: fmt.Errorf("%s takes one job: pass one settings file, or merge several with -f, as in: -f base.yaml -f job.yaml", what)}
	}
	in.files = append(in.files, args...)
	in.holdWarnings = true
	loaded, err := in.load(s)
	if err != nil {
		return nil, err
	}
	ns, _ := loaded.Values["namespace"].(string)
	if flag := kube.Namespace(); ns != "" && flag != "" && flag != ns {
		return nil, settings.UsageError{Err: fmt.Errorf("the settings say namespace: %s, and -n says %s; drop -n, or change namespace in the settings", ns, flag)}
	}
	p, err := in.fileProfile()
	if err != nil {
		return nil, err
	}
	client, err := dial(s, kube)
	if err != nil {
		return nil, err
	}
	if ns == "" {
		ns = client.Namespace
	}
	var denied cluster.Denied
	if p == nil {
		read, err := clusterProfile(ctx, client, ns)
		if err != nil {
			return nil, err
		}
		p, denied = read.profile, read.denied
		if len(read.unread) > 0 {
			sayUnread(s, read.unread, p)
			in.profileSaid = true
		}
	}
	loaded, result, err := in.renderUnder(s, loaded, p)
	if err != nil {
		return nil, err
	}
	job, err := cluster.NewJob(result.Manifest, ns)
	if err != nil {
		return nil, err
	}
	job.Carry(result.ConfigMaps)
	return &target{in: loaded, values: result.Values, warnings: result.Warnings, client: client, job: job, denied: denied}, nil
}

// jobFlags name a submitted job, as status, logs, stop, resume and delete
// take it: by its name (NAME, in the namespace of -n, else the context's),
// or by its settings, rendered as submit renders them.
type jobFlags struct {
	in   inputFlags
	kube cluster.Flags
	// command is the command's name, and values how it names the
	// settings flag (-f, or --values where -f is --follow), for messages.
	command, values string
}

func (j *jobFlags) register(cmd *cobra.Command, shorthand string) {
	j.command, j.values = cmd.Name(), "-"+shorthand
	if shorthand == "" {
		j.values = "--values"
	}
	j.in.registerAs(cmd, shorthand)
	j.kube.Register(cmd.Flags())
	j.complete(cmd)
}

// complete registers the completion of a command that names a job: NAME,
// and --role where it has it (a command registers its jobFlags after its
// own flags).
func (j *jobFlags) complete(cmd *cobra.Command) {
	cmd.ValidArgsFunction = j.completeName
	if cmd.Flag("role") != nil {
		cmd.RegisterFlagCompletionFunc("role", j.completeRole)
	}
}

// completionTimeout bounds the questions of a completion to the cluster:
// the shell waits for the answer at each Tab, and none comes in time from
// a cluster that does not answer.
const completionTimeout = 3 * time.Second

// quiet are the streams of a completion, which writes nothing but the
// names: what the cluster warns of would be written into the shell's line.
var quiet = Streams{Out: io.Discard, Err: io.Discard}

// completeName completes NAME with the names of the jobs in the namespace
// of -n, else the context's, as Client.Complete finds them; none when the
// cluster does not answer.
func (j *jobFlags) completeName(cmd *cobra.Command, args []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 || j.settingsGiven() {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	client, err := dial(quiet, &j.kube)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, _ := client.Complete(ctx, client.Namespace, typed)
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeRole completes --role with the roles of the pods of the job
// named, or given by its settings, and the pods by role and index
// (Client.Roles); none when the cluster does not answer.
func (j *jobFlags) completeRole(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	client, ref, err := j.find(ctx, quiet, args)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	roles, _ := client.Roles(ctx, ref)
	return roles, cobra.ShellCompDirectiveNoFileComp
}

// find finds the job that args name, or the settings: the client of its
// cluster, and the job. No name, an empty one, or a KIND/NAME of no kind
// is a wrong command line; a name no job has is cluster.NoSuchJob, one
// that jobs of several kinds have cluster.Ambiguous.
func (j *jobFlags) find(ctx context.Context, s Streams, args []string) (*cluster.Client, cluster.Ref, error) {
	settingsGiven := j.settingsGiven()
	switch {
	case settingsGiven && len(args) > 0:
		return nil, cluster.Ref{}, settings.UsageError{Err: fmt.Errorf("name the job, or give its settings with %s, not both", j.values)}
	case !settingsGiven && (len(args) != 1 || args[0] == ""):
		return nil, cluster.Ref{}, settings.UsageError{Err: fmt.Errorf("name one job: generator %s NAME [-n NAMESPACE], or give its settings: generator %s %s settings.yaml",
			j.command, j.command, j.values)}
	}
	if settingsGiven {
		t, err := connect(ctx, s, &j.in, &j.kube, nil, j.command)
		if err != nil {
			return nil, cluster.Ref{}, err
		}
		return t.client, t.job.Ref(), nil
	}
	if err := cluster.CheckName(args[0]); err != nil {
		return nil, cluster.Ref{}, settings.UsageError{Err: err}
	}
	client, err := dial(s, &j.kube)
	if err != nil {
		return nil, cluster.Ref{}, err
	}
	ref, err := client.Find(ctx, client.Namespace, args[0])
	return client, ref, err
}

// settingsGiven tells whether the job is given by its settings.
func (j *jobFlags) settingsGiven() bool {
	return len(j.in.files)+len(j.in.sets)+len(j.in.setStrings) > 0
}

// dial reads the kubeconfig for a client of the cluster, whose warnings go to
// standard error; a flag that names what is not there (--kubeconfig,
// --context) is a wrong command line. The client keeps the failures it sees
// in the user's cache folder.
func dial(s Streams, kube *cluster.Flags) (*cluster.Client, error) {
	// What a cluster answers grows with its jobs and pods (a thousand pods
	// are tens of MiB decoded), and a follower runs for days: the garbage
	// collector that main turns off for renders runs as Go's default has it.
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	client, err := connectTo(kube, userAgent(), s.Err)
	var flag cluster.BadFlag
	if errors.As(err, &flag) {
		return nil, settings.UsageError{Err: flag}
	}
	if err != nil {
		return nil, err
	}
	if keeper, err := failure.DefaultKeeper(); err == nil {
		client.Keeper = &keeper
	}
	return client, nil
}

// connectTo reads the kubeconfig for a client of the cluster; tests put a
// fake cluster in its place.
var connectTo = (*cluster.Flags).Connect

// check asks the cluster about the job and writes the findings to standard
// error, placed in the settings, in order with the render's warnings but
// those the cluster's answers make moot. It fails when one is an error.
// What the user's role kept it from asking is one line at the end, when
// sayDenied (generator check), and nothing otherwise (submit, which would
// say it at every run).
func (t *target) check(ctx context.Context, s Streams, sayDenied bool) error {
	found, err := preflight.Check(ctx, t.client, t.job, t.values)
	if err != nil {
		return err
	}
	for _, w := range t.warnings {
		if !preflight.Answers(found, w) {
			found = append(found, w)
		}
	}
	placed := t.in.Locate(found)
	counts := map[diag.Severity]int{}
	denied := t.denied
	for _, f := range placed {
		if f.Severity == diag.Denied {
			denied = append(denied, cluster.Refusal{What: f.Message, Needs: f.Needs})
			continue
		}
		counts[f.Severity]++
		fmt.Fprintln(s.Err, f)
	}
	if sayDenied && len(denied) > 0 {
		fmt.Fprintln(s.Err, "could not check "+denied.String())
	}
	if counts[diag.Error] > 0 {
		return findingsError{counts}
	}
	return nil
}

// findingsError is a check that found problems: the findings are written
// already; the error is the summary line.
type findingsError struct{ counts map[diag.Severity]int }

func (e findingsError) Error() string {
	return fmt.Sprintf("%s; the job cannot run on this cluster as it is", summary(e.counts))
}

// summary counts the findings of a check in words: "2 problems, 1 warning".
func summary(counts map[diag.Severity]int) string {
	var parts []string
	for _, c := range []struct {
		severity     diag.Severity
		one, several string
	}{
		{diag.Error, "1 problem", "%d problems"},
		{diag.Warning, "1 warning", "%d warnings"},
		{diag.Unchecked, "1 question the cluster would not answer", "%d questions the cluster would not answer"},
	} {
		switch n := counts[c.severity]; {
		case n == 1:
			parts = append(parts, c.one)
		case n > 1:
			parts = append(parts, fmt.Sprintf(c.several, n))
		}
	}
	if len(parts) == 0 {
		return "no problem found"
	}
	return strings.Join(parts, ", ")
}

// name is how messages name the job: AppWrapper team-a/llama.
func (t *target) name() string {
	obj := t.job.Object
	return fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
}

// userAgent names the generator and its version to the API server.
func userAgent() string {
	version := "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		version = info.Main.Version
	}
	return "torchwrap-generator/" + version
}

func newCheck(s Streams) *cobra.Command {
	var in inputFlags
	var kube cluster.Flags
	cmd := &cobra.Command{
		Use:   "check [settings.yaml] [-f more.yaml]... [--set key=value] [--context NAME] [-n NAMESPACE]",
		Short: "Ask the cluster whether the job can run there, without submitting it",
		Long: `Check renders the settings as render does, then asks the cluster of your
kubeconfig (as kubectl finds it: --kubeconfig, KUBECONFIG, ~/.kube/config;
--context) everything that would keep the job from running, and changes
nothing there:

  - the APIs it needs are served: AppWrapper, the job's kind, Kueue's queues;
  - you may create the job in its namespace, and the API server accepts it: a
    server-side dry-run create, through the admission webhooks; Kueue's webhook
    must suspend it, or no queue would hold it;
  - its LocalQueue exists, and the ClusterQueue behind it covers every resource
    the job requests, in amounts it can ever grant (nominal quota plus what it
    may borrow);
  - the objects the settings name exist: PriorityClass, WorkloadPriorityClass,
    PersistentVolumeClaims, Secrets and ConfigMaps (with the keys named),
    StorageClass, NetworkAttachmentDefinition, ServiceAccount;
  - with --workspace, you may create the ConfigMaps that carry it, and the job
    does not go to a MultiKueue worker, which would not have them.

Each finding is written with the file, line and column of the setting it is
about, and how to fix it. What you may not read is reported as a question the
cluster would not answer, not as a problem. The namespace is the settings'
namespace, else -n, else your context's.

Exit codes: 0 when nothing stops the job (warnings may remain), 1 when
something does or the settings are invalid, 2 for a wrong command line, 3 when
the cluster cannot be reached.`,
		Example: `  generator check settings.yaml
  generator check -f settings.yaml --context prod -n team-a
  generator check settings.yaml --workspace .`,
		Annotations: map[string]string{consequence: "nothing was checked against the cluster"},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			t, err := connect(cmd.Context(), s, &in, &kube, args, "check")
			if err != nil {
				return err
			}
			if err := t.check(cmd.Context(), s, true); err != nil {
				return err
			}
			_, err = fmt.Fprintf(s.Out, "OK: %s can run on this cluster\n", t.name())
			return err
		}),
	}
	in.register(cmd)
	in.registerWorkspace(cmd)
	kube.Register(cmd.Flags())
	return cmd
}

// unreachable tells whether an error means the cluster could not be asked.
func unreachable(err error) bool {
	var u cluster.Unreachable
	return errors.As(err, &u)
}
