package cli

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/settings"
)

func newAccess(s Streams) *cobra.Command {
	var kube cluster.Flags
	var jobKind, wrapper string
	var roles bool
	cmd := &cobra.Command{
		Use:   "access [-n NAMESPACE] [--job-kind KIND] [--wrapper AppWrapper|none] | access --roles",
		Short: "Which commands your role lets you run in a namespace, and the rights each lacks",
		Long: `Access asks the API server, for each command that talks to a cluster, whether
you have the rights it takes in the namespace of -n (else your context's), one
SelfSubjectAccessReview each (which every user may ask), and writes a table:
YES when you have them all; PART when the command runs but tells less (check
asks fewer questions, status leaves out why a job waits); NO when it fails. For
each, the rights you lack, written as kubectl auth can-i takes them, so that a
request to an administrator names the exact verbs. The rights are those of jobs
of --job-kind, wrapped as --wrapper says, as the settings' jobKind and wrapper.

With --roles it asks nothing, and writes the ClusterRoles an administrator
binds: torchwrap-user, every right of every command in a namespace, to bind
there with a RoleBinding (as MLBatch binds mlbatch-edit); and
torchwrap-cluster-reader, the reads of the cluster's own objects that make
check whole (PriorityClasses, ClusterQueues, Nodes, ...) and of the profiles'
ConfigMaps, by their name alone, to bind with a ClusterRoleBinding.
docs/cluster.md tells what each command can do under the roles platforms use.

Exit codes: 0 when the table or the roles were written, 1 when the cluster
refused to answer, 2 for a wrong command line, 3 when the cluster cannot be
reached.`,
		Example: `  generator access
  generator access -n team-a --job-kind JobSet --wrapper none
  generator access --roles > roles.yaml`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{consequence: "nothing was asked"},
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if roles {
				return writeRoles(s)
			}
			kinds, err := accessKinds(jobKind, wrapper)
			if err != nil {
				return err
			}
			client, err := dial(s, &kube)
			if err != nil {
				return err
			}
			uses, err := cluster.Uses(client.Namespace, kinds...)
			if err != nil {
				return settings.UsageError{Err: err}
			}
			// Every right once, asked at once.
			var rights []cluster.Right
			seen := map[cluster.Right]bool{}
			for _, u := range uses {
				for _, r := range append(u.Needs, u.Helps...) {
					if !seen[r] {
						seen[r] = true
						rights = append(rights, r)
					}
				}
			}
			answers, err := client.MayAll(cmd.Context(), rights)
			if err != nil {
				return err
			}
			may := map[cluster.Right]bool{}
			for i, r := range rights {
				may[r] = answers[i]
			}
			fmt.Fprintf(s.Err, "in namespace %s on the cluster at %s, for %s:\n", client.Namespace, client.Server, strings.Join(kinds, " wrapping "))
			var out bytes.Buffer
			w := tabwriter.NewWriter(&out, 0, 0, 3, ' ', 0)
			fmt.Fprintln(w, "COMMAND\tMAY\tLACKS")
			for _, u := range uses {
				lacksNeeds, lacksHelps := lacking(u.Needs, may), lacking(u.Helps, may)
				answer := "YES"
				switch {
				case len(lacksNeeds) > 0:
					answer = "NO"
				case len(lacksHelps) > 0:
					answer = "PART"
				}
				row := []string{u.Command, answer}
				if lacks := append(lacksNeeds, lacksHelps...); len(lacks) > 0 {
					row = append(row, strings.Join(lacks, ", "))
				}
				fmt.Fprintln(w, strings.Join(row, "\t"))
			}
			w.Flush()
			_, err = s.Out.Write(out.Bytes())
			return err
		}),
	}
	kube.Register(cmd.Flags())
	flags := cmd.Flags()
	flags.StringVar(&jobKind, "job-kind", "PyTorchJob", "the kind of the jobs, as the settings' jobKind")
	flags.StringVar(&wrapper, "wrapper", "", "AppWrapper or none, as the settings' wrapper (default: AppWrapper, none for a TrainJob)")
	flags.BoolVar(&roles, "roles", false, "write the ClusterRoles of every command's rights, for an administrator to bind; ask the cluster nothing")
	return cmd
}

// accessKinds are the kinds of a job of the kind and wrapper, as the
// chart makes them: the kind submitted, then the one it wraps.
func accessKinds(jobKind, wrapper string) ([]string, error) {
	if wrapper == "" {
		wrapper = "AppWrapper"
		if jobKind == "TrainJob" {
			wrapper = "none"
		}
	}
	switch {
	case wrapper != "AppWrapper" && wrapper != "none":
		return nil, settings.UsageError{Err: fmt.Errorf("--wrapper %s: it is AppWrapper or none", wrapper)}
	case wrapper == "AppWrapper" && jobKind == "TrainJob":
		return nil, settings.UsageError{Err: fmt.Errorf("--job-kind TrainJob --wrapper AppWrapper: AppWrapper cannot wrap a TrainJob; use --wrapper none")}
	case wrapper == "AppWrapper":
		return []string{"AppWrapper", jobKind}, nil
	}
	return []string{jobKind}, nil
}

// lacking are the rights of a list that the user does not have, written
// out, once each.
func lacking(rights []cluster.Right, may map[cluster.Right]bool) []string {
	var out []string
	for _, r := range rights {
		if s := r.String(); !may[r] && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// writeRoles writes the ClusterRoles of cluster.Roles as a YAML stream,
// with how to bind them.
func writeRoles(s Streams) error {
	var out bytes.Buffer
	out.WriteString(`# The rights of generator's commands (generator access --roles).
# torchwrap-user: every command in a namespace; bind it there, for each user or group:
#   kubectl create rolebinding NAME -n NAMESPACE --clusterrole torchwrap-user --user USER
# torchwrap-cluster-reader: the cluster's own objects that check reads, and the profiles
# (ConfigMaps torchwrap-profile, by that name alone); bind it once:
#   kubectl create clusterrolebinding torchwrap-cluster-reader --clusterrole torchwrap-cluster-reader --group system:authenticated
`)
	for _, role := range cluster.Roles() {
		data, err := sigsyaml.Marshal(role)
		if err != nil {
			return err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	_, err := s.Out.Write(out.Bytes())
	return err
}
