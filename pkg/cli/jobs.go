package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

func newList(s Streams) *cobra.Command {
	var kube cluster.Flags
	var allNamespaces bool
	var opts cluster.ListOptions
	var states []string
	var output string
	cmd := &cobra.Command{
		Use:     "list [-n NAMESPACE | -A] [-l SELECTOR] [--state STATE]... [--all-jobs] [-o wide|json|yaml]",
		Aliases: []string{"ls"},
		Short:   "List the submitted jobs, with their states, queues and pods",
		Long: `List shows the jobs in the namespace of -n (else your context's), or with -A
in every namespace you may see: name, kind, state (Queued, Admitted,
Running, Suspended, Succeeded, Failed, Deleting; Refused while the API
server refuses its pods, which a line names), LocalQueue, position in
the queue (where Kueue's visibility API answers; it says so when it does
not), pods ready of expected, GPUs requested, restarts (the job's retries:
AppWrapper's resettingCount, JobSet's restarts, T9k's backoffCount) and
age. -o wide adds the ClusterQueue, the Kueue Workload, the restarts of the
pods' containers and why the job is where it is; -o json and -o yaml write
{"items": [...], "notes": [...]}, each item as status -o json writes it.

By default it lists the jobs the generator made: those with the annotation
torchwrap.dev/generator-version, which the chart puts on every object it
renders. --all-jobs lists every AppWrapper, PyTorchJob, JobSet, TrainJob,
PyTorchTrainingJob and DeepSpeedJob, whoever made it. A job that another one
made (an AppWrapper's PyTorchJob, a TrainJob's JobSet) is shown as that one.

It asks the cluster once for each kind, once for the pods, once for each
reason a pod is refused for (its Warning events), and, in pages of a
thousand, Kueue's visibility API for each LocalQueue the jobs name. Kueue's
Workloads are read too, in one list, only where a line needs them: -o wide,
json and yaml, a job Kueue holds that its queue does not list (stopped, or
admitted but not started yet), or one that MultiKueue dispatched.

Exit codes: 0 when the list was shown (empty too), 1 when the cluster
refused to list the jobs, 2 for a wrong command line, 3 when the cluster
cannot be reached.`,
		Example: `  generator list
  generator ls -A --state Running,Queued
  generator list -n team-a -l team=vision -o json
  generator list --all-jobs -o wide`,
		Annotations: map[string]string{consequence: "no job was listed"},
		Args:        cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			switch {
			case output != "" && output != "wide" && output != "json" && output != "yaml":
				return settings.UsageError{Err: fmt.Errorf("-o %s: the formats are wide, json and yaml; leave -o out for a table", output)}
			case allNamespaces && kube.Namespace() != "":
				return settings.UsageError{Err: errors.New("-A lists every namespace, -n one; give one of them")}
			}
			for _, name := range states {
				state, ok := stateNamed(name)
				if !ok {
					return settings.UsageError{Err: fmt.Errorf("--state %s: the states are %s", name, strings.Join(stateNames(), ", "))}
				}
				opts.States = append(opts.States, state)
			}
			opts.Why = output != ""
			client, err := dial(s, &kube)
			if err != nil {
				return err
			}
			if !allNamespaces {
				opts.Namespace = client.Namespace
			}
			listing, err := client.List(cmd.Context(), opts)
			if err != nil {
				return err
			}
			var rights []string
			if allNamespaces && listing.NoKind {
				var listed string
				if listing, listed, err = listNamed(cmd.Context(), client, kube.Namespaces(client.Namespace), opts); err != nil {
					return err
				}
				if listed != "" {
					rights = append(rights, "your role does not let you list jobs across namespaces (RBAC): these are those of namespace "+listed+" alone, as your kubeconfig names")
				}
			}
			if listing.NoKind {
				where := fmt.Sprintf("in namespace %q", opts.Namespace)
				if allNamespaces {
					where = "in any namespace your kubeconfig names, nor across namespaces"
				}
				return fmt.Errorf("your role does not let you list jobs %s (RBAC); ask an administrator for list on %s (generator access tells each command's)",
					where, cluster.JobResources())
			}
			for _, note := range listing.Notes {
				fmt.Fprintln(s.Err, "not read: "+note)
			}
			if len(listing.Denied) > 0 {
				rights = append(rights, "not read: "+listing.Denied.String())
			}
			if len(rights) > 0 {
				fmt.Fprintln(s.Err, strings.Join(rights, "; "))
			}
			return writeListing(s, listing, opts, output, allNamespaces)
		}),
	}
	kube.Register(cmd.Flags())
	flags := cmd.Flags()
	flags.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the jobs of every namespace you may see")
	flags.StringVarP(&opts.Selector, "selector", "l", "", "only the jobs whose labels match, as kubectl's -l: team=vision,tier!=test")
	flags.StringSliceVar(&states, "state", nil, "only the jobs in these states (repeat, or separate with commas): "+strings.Join(stateNames(), ", "))
	flags.BoolVar(&opts.Everyone, "all-jobs", false, "every job of the kinds the generator makes, not only those it made")
	flags.StringVarP(&output, "output", "o", "", "wide: more columns; json or yaml: the list as data")
	return cmd
}

// listNamed lists the jobs of each namespace, for list -A under a role
// bound in namespaces, which lists nothing across them: one listing of
// those it may list (NoKind when none), and their names, quoted.
func listNamed(ctx context.Context, client *cluster.Client, namespaces []string, opts cluster.ListOptions) (cluster.Listing, string, error) {
	all := cluster.Listing{NoKind: true}
	var listed []string
	for _, ns := range namespaces {
		opts.Namespace = ns
		one, err := client.List(ctx, opts)
		if err != nil {
			return all, "", err
		}
		if !one.NoKind {
			listed = append(listed, strconv.Quote(ns))
			all.Jobs, all.Notes = append(all.Jobs, one.Jobs...), append(all.Notes, one.Notes...)
			all.Denied, all.NoKind = append(all.Denied, one.Denied...), false
		}
	}
	return all, strings.Join(listed, ", "), nil
}

// writeListing writes the jobs as a table, or as JSON or YAML.
func writeListing(s Streams, listing cluster.Listing, opts cluster.ListOptions, output string, allNamespaces bool) error {
	if listing.Jobs == nil {
		listing.Jobs = []cluster.Status{}
	}
	switch output {
	case "json":
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(listing)
	case "yaml":
		data, err := sigsyaml.Marshal(listing)
		if err != nil {
			return err
		}
		_, err = s.Out.Write(data)
		return err
	}
	if len(listing.Jobs) == 0 {
		where := fmt.Sprintf("in namespace %q", opts.Namespace)
		if allNamespaces {
			where = "in any namespace you may see"
		}
		made := " that the generator made (--all-jobs lists them all)"
		if opts.Everyone {
			made = ""
		}
		_, err := fmt.Fprintf(s.Err, "no jobs %s%s\n", where, made)
		return err
	}
	var refused []string
	for _, job := range listing.Jobs {
		if job.Refused() {
			refused = append(refused, job.Name)
		}
	}
	if len(refused) > 0 && output != "wide" {
		jobs := schema.AndList(refused)
		if len(refused) > 3 {
			jobs = fmt.Sprintf("%d jobs (%s, ...)", len(refused), strings.Join(refused[:3], ", "))
		}
		fmt.Fprintf(s.Err, "the API server refuses the pods of %s (Refused): list -o wide says why, generator status %s how to fix it\n", jobs, refused[0])
	}
	_, err := io.WriteString(s.Out, listing.Table(allNamespaces, output == "wide", time.Now()))
	return err
}

// stateNamed is the state of a name, in any letter case.
func stateNamed(name string) (cluster.State, bool) {
	for _, state := range cluster.States {
		if strings.EqualFold(name, string(state)) {
			return state, true
		}
	}
	return "", false
}

func stateNames() []string {
	names := make([]string, len(cluster.States))
	for i, state := range cluster.States {
		names[i] = string(state)
	}
	return names
}

func newStop(s Streams) *cobra.Command {
	return newHold(s, true)
}

func newResume(s Streams) *cobra.Command {
	return newHold(s, false)
}

// newHold is the command stop, or resume: they hold a job by the same
// field, set one way or the other.
func newHold(s Streams, stop bool) *cobra.Command {
	var job jobFlags
	cmd := &cobra.Command{
		Use:   "stop NAME [-n NAMESPACE] | stop -f settings.yaml",
		Short: "Hold a job without deleting it: its pods go, its quota is freed",
		Long: `Stop holds a submitted job without deleting it: its pods go and its quota is
freed, while the job, its objects and its history stay; generator resume
lets it go on. How depends on the job:

  - a job Kueue manages (an AppWrapper, or a PyTorchJob, JobSet or TrainJob
    submitted alone with a queue): its Kueue Workload's spec.active is set
    to false, as kueuectl stop workload does; Kueue evicts it (reason
    Deactivated), suspends it and frees its quota;
  - a PyTorchJob, JobSet or TrainJob that Kueue does not manage: its own
    suspend field (spec.runPolicy.suspend, spec.suspend);
  - a PyTorchTrainingJob or DeepSpeedJob submitted alone: T9k has no suspend
    field, so it is paused (spec.runMode.pause.enabled).

status then shows the job as Suspended, with what holds it. Name the job as
status does, or give its settings with -f.

Exit codes: 0 when the job is held (or was already), 1 when there is no such
job, it has finished, or you may not change it, 2 for a wrong command line, 3
when the cluster cannot be reached.`,
		Example: `  generator stop llama-8b -n team-a
  generator stop -f settings.yaml`,
		Annotations: map[string]string{consequence: "nothing was changed"},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			client, ref, err := job.find(cmd.Context(), s, args)
			if err != nil {
				return err
			}
			change := client.Stop
			if !stop {
				change = client.Resume
			}
			done, err := change(cmd.Context(), ref)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(s.Out, done)
			return err
		}),
	}
	if !stop {
		cmd.Use = "resume NAME [-n NAMESPACE] | resume -f settings.yaml"
		cmd.Short = "Let a job that stop held go on"
		cmd.Long = `Resume lets a job that generator stop held go on, by the field stop set:
its Kueue Workload's spec.active back to true, and Kueue queues it again
(as kueuectl resume workload does); or the job's own suspend field (T9k's
pause) back to false, and its controller starts it again. Name the job as
status does, or give its settings with -f.

Exit codes: 0 when the job goes on (or was not held), 1 when there is no
such job, it has finished, or you may not change it, 2 for a wrong command
line, 3 when the cluster cannot be reached.`
		cmd.Example = `  generator resume llama-8b -n team-a
  generator resume -f settings.yaml`
	}
	job.register(cmd, "f")
	return cmd
}

func newDelete(s Streams) *cobra.Command {
	var job jobFlags
	var wait, ignoreNotFound bool
	cmd := &cobra.Command{
		Use:   "delete NAME [-n NAMESPACE] | delete -f settings.yaml [--wait=false] [--ignore-not-found]",
		Short: "Delete a job and what it made, and wait until its pods are gone",
		Long: `Delete deletes a submitted job and what it made (the wrapped job, its pods,
its Kueue Workload), in the foreground: what it made goes first. It waits
until the job and its pods are gone, unless --wait=false. Name the job as
status does, or give its settings with -f. A job that is not there is an
error, unless --ignore-not-found: then there is nothing to do.

Exit codes: 0 when the job is deleted (or, with --ignore-not-found, was not
there), 1 when there is no such job, you may not delete it, or it was not
gone in time, 2 for a wrong command line, 3 when the cluster cannot be
reached.`,
		Example: `  generator delete llama-8b -n team-a
  generator delete -f settings.yaml --ignore-not-found --wait=false`,
		Annotations: map[string]string{consequence: "nothing was deleted"},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			client, ref, err := job.find(cmd.Context(), s, args)
			if err == nil {
				err = deleteJob(cmd.Context(), s, client, ref, wait)
			}
			if ignoreNotFound && missing(err) {
				return nil
			}
			return err
		}),
	}
	job.register(cmd, "f")
	cmd.Flags().BoolVar(&wait, "wait", true, "wait until the job and its pods are gone")
	cmd.Flags().BoolVar(&ignoreNotFound, "ignore-not-found", false, "a job that is not there is not an error")
	return cmd
}

// deleteJob deletes a job, and says what it did.
func deleteJob(ctx context.Context, s Streams, client *cluster.Client, ref cluster.Ref, wait bool) error {
	done, err := client.Delete(ctx, ref, wait)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(s.Out, done)
	return err
}

// missing tells whether an error says that there is no such job: none of
// that name, or none of that kind on this cluster.
func missing(err error) bool {
	return errors.As(err, &cluster.NotFound{}) || errors.As(err, &cluster.NoSuchJob{}) || errors.As(err, &cluster.NotServed{})
}
