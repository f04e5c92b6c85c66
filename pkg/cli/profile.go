package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	sigsyaml "sigs.k8s.io/yaml"

	chartfiles "github.com/torchwrap/generator/chart"
	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/pkg/settings"
)

// fileProfile reads the --profile files, each refining the ones before:
// nil when none is given. A file that cannot be read is a wrong command
// line; one that is not a valid profile, profile.Invalid.
func (f *inputFlags) fileProfile() (*profile.Profile, error) {
	if len(f.profiles) == 0 {
		return nil, nil
	}
	sources, err := readProfiles(f.profiles)
	if err != nil {
		return nil, err
	}
	return profile.Read(sources...)
}

// readProfiles reads profile files, "-" standard input never: a profile is
// the platform's, kept in a file or a cluster. A file that cannot be read is
// a wrong command line.
func readProfiles(paths []string) ([]profile.Source, error) {
	var sources []profile.Source
	for _, path := range paths {
		name, data, err := profile.File.ReadFile(path, nil)
		if err != nil {
			return nil, settings.UsageError{Err: err}
		}
		sources = append(sources, profile.Source{Name: name, Data: data})
	}
	return sources, nil
}

// clusterProfile reads the profile of the cluster for the jobs of a
// namespace: the cluster-wide one and the namespace's, both at once, one
// GET each. A cluster that does not answer is cluster.Unreachable; a
// ConfigMap whose profile is not valid, profile.Invalid.
func clusterProfile(ctx context.Context, client *cluster.Client, namespace string) (profileRead, error) {
	places := profile.Places(namespace)
	type read struct {
		data map[string]string
		err  error
	}
	reads := make([]read, len(places))
	var wg sync.WaitGroup
	for i, ns := range places {
		wg.Go(func() {
			reads[i].data, reads[i].err = client.ConfigMap(ctx, ns, profile.ConfigMapName)
		})
	}
	wg.Wait()
	var found profileRead
	var sources []profile.Source
	for i, r := range reads {
		configMap := profile.ConfigMap(places[i])
		var unreachable cluster.Unreachable
		switch {
		case errors.As(r.err, &unreachable):
			return profileRead{}, r.err
		case apierrors.IsForbidden(r.err):
			found.denied.Add(configMap+" (a profile)", cluster.ProfileRight(places[i]))
		case r.err != nil:
			found.unread = append(found.unread, r.err.Error())
		case r.data == nil:
			found.missing = append(found.missing, configMap)
		default:
			src, err := profile.FromConfigMap(places[i], r.data)
			if err != nil {
				return profileRead{}, err
			}
			sources = append(sources, src)
		}
	}
	if len(sources) > 0 {
		p, err := profile.Read(sources...)
		if err != nil {
			return profileRead{}, err
		}
		found.profile = p
	}
	return found, nil
}

// unknown says what the user's role kept from clusterProfile, for the
// commands that say it alone: "whether ConfigMap kube-public/torchwrap-profile
// holds a profile is not known: your role does not let you read it (RBAC;
// the right that would: get configmaps in namespace kube-public)".
func (r profileRead) unknown() string {
	var names, rights []string
	for _, d := range r.denied {
		names = append(names, strings.TrimSuffix(d.What, " (a profile)"))
		rights = append(rights, d.Needs)
	}
	return fmt.Sprintf("whether %s holds a profile is not known: your role does not let you read it (RBAC; the right that would: %s)",
		strings.Join(names, " or "), strings.Join(rights, ", "))
}

// profileRead is what clusterProfile found: the profile (nil when none was
// found or read), the ConfigMaps that are not there (missing), and why of
// each it could not read: the user's role does not allow it (denied), or
// another reason (unread).
type profileRead struct {
	profile *profile.Profile
	missing []string
	unread  []string
	denied  cluster.Denied
}

// sayUnread says, on standard error, which of the cluster's profiles could
// not be read, and what was applied instead.
func sayUnread(s Streams, unread []string, p *profile.Profile) {
	applied := "no profile"
	if p != nil {
		applied = p.Name() + " alone"
	}
	fmt.Fprintf(s.Err, "warning: profile: %s; applied %s\n", strings.Join(unread, "; "), applied)
}

func newProfile(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "What a platform team gives every job of its cluster: defaults, imposed values and rules",
		Long: `A profile is what a platform team writes once for its cluster, or for one
namespace: defaults (settings every job starts from), imposed values (settings
no user may change) and rules on the settings, each with the platform's own
message. Its schema is what generator schema --profile prints; docs/profile.md
tells all.

A cluster keeps its profiles in ConfigMaps named torchwrap-profile, under the
key profile.yaml: the one in kube-public for every namespace, and one in a
namespace for its jobs, which refines it. check and submit apply the
cluster's; render, validate and run --local apply one only when given
(--profile FILE), so that their output stays the same offline.

  validate   checks profile files, as a render under them would
  render     what an administrator applies: the ConfigMap, and the
             ValidatingAdmissionPolicy that has the API server enforce the
             rules on every job, however it was written
  values     a profile's defaults as a values file for helm template
  get        the cluster's profile for a namespace, as one file`,
		Example: `  generator profile validate lab.yaml
  generator profile render lab.yaml --cluster | kubectl apply -f -
  generator profile render team-a.yaml -n team-a | kubectl apply -f -
  generator profile get -n team-a -o profile.yaml`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error { return cmd.Help() }),
	}
	cmd.AddCommand(newProfileValidate(s), newProfileRender(s), newProfileValues(s), newProfileGet(s))
	return cmd
}

// loadProfile reads profile files, each refining the ones before, and
// checks them whole: a profile with problems is profile.Invalid.
func loadProfile(paths []string) (*profile.Profile, error) {
	if len(paths) == 0 {
		return nil, settings.UsageError{Err: errors.New("no profile given; name a profile file, such as lab.yaml")}
	}
	sources, err := readProfiles(paths)
	if err != nil {
		return nil, err
	}
	p, err := profile.Read(sources...)
	if err != nil {
		return nil, err
	}
	if problems := p.Problems(); len(problems) > 0 {
		return nil, profile.Invalid{Problems: problems}
	}
	return p, nil
}

func newProfileValidate(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check profile files",
		Long: `Validate checks profile files, each refining the ones before it (as a
namespace's refines the cluster's), and prints one line when they can be
applied, or every problem, with its file, line and column: the profile's own
schema, keys that settings.yaml does not have, rules that do not fit their
key's type, defaults of the wrong type, a default (the profile's, or the
chart's) that breaks a rule, an imposed value a later profile changes.`,
		Example: `  generator profile validate lab.yaml
  generator profile validate lab.yaml team-a.yaml`,
		Annotations: map[string]string{consequence: "the profile cannot be applied"},
		RunE: run(func(_ *cobra.Command, args []string) error {
			p, err := loadProfile(args)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(s.Out, "OK: %s: %s\n", p.Name(), p.Summary())
			return err
		}),
	}
}

func newProfileRender(s Streams) *cobra.Command {
	var everywhere bool
	var namespace, file string
	cmd := &cobra.Command{
		Use:   "render FILE (--cluster | -n NAMESPACE) [-o FILE]",
		Short: "Write what an administrator applies to give a cluster, or a namespace, its profile",
		Long: `Render writes what an administrator applies (kubectl apply -f) to give every
namespace (--cluster) or one namespace (-n) the profile of FILE:

  - the ConfigMap torchwrap-profile, which holds the file's text under the key
    profile.yaml: in kube-public for --cluster, else in the namespace;
  - for --cluster, a Role and RoleBinding in kube-public that let every user
    read that ConfigMap, and nothing else there (the users of a namespace read
    its ConfigMaps already, with the view role);
  - a ValidatingAdmissionPolicy and its binding (torchwrap-profile, or
    torchwrap-profile.NAMESPACE), with one validation for each rule and imposed
    value that the objects carry, so that the API server refuses a job that
    breaks one, however it was written, with the rule's message. The objects it
    checks are AppWrappers, PyTorchJobs, JobSets, TrainJobs and T9k's jobs;
    an AppWrapper's job, and a TrainJob's JobSet, are checked in the object
    that makes them.

It says on standard error which rules the API server cannot check, and why:
they bind the jobs that generator renders only.`,
		Example: `  generator profile render lab.yaml --cluster | kubectl apply -f -
  generator profile render team-a.yaml -n team-a -o team-a-profile.yaml`,
		Args:        cobra.ExactArgs(1),
		Annotations: map[string]string{consequence: "nothing was rendered"},
		RunE: run(func(_ *cobra.Command, args []string) error {
			switch {
			case everywhere && namespace != "":
				return settings.UsageError{Err: errors.New("--cluster and -n name two places; a profile applies to every namespace (--cluster) or to one (-n NAMESPACE)")}
			case !everywhere && namespace == "":
				return settings.UsageError{Err: errors.New("say where the profile applies: --cluster for every namespace, or -n NAMESPACE for one")}
			}
			sources, err := readProfiles(args)
			if err != nil {
				return err
			}
			m, err := chartfiles.Metadata()
			if err != nil {
				return err
			}
			objects, unchecked, err := profile.Objects(sources[0], profile.Placement{Namespace: namespace}, m.Version)
			if err != nil {
				return err
			}
			var b bytes.Buffer
			for _, obj := range objects {
				data, err := sigsyaml.Marshal(obj)
				if err != nil {
					return err
				}
				b.WriteString("---\n")
				b.Write(data)
			}
			for _, u := range unchecked {
				fmt.Fprintf(s.Err, "%s: %s: the API server cannot check this %s, which binds only the jobs generator renders: %s\n", u.At, u.Key, u.What, u.Why)
			}
			return writeOutput(s, file, b.Bytes())
		}),
	}
	cmd.Flags().BoolVar(&everywhere, "cluster", false, "the profile of every namespace: its ConfigMap in kube-public")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the namespace the profile is for")
	cmd.Flags().StringVarP(&file, "output-file", "o", "", "write the manifests to this file (atomically) instead of standard output")
	return cmd
}

func newProfileValues(s Streams) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "values FILE... [-o FILE]",
		Short: "Write a profile's values as a values file for helm template",
		Long: `Values writes the settings a profile gives every job (its defaults, and its
imposed values over them) as a Helm values file: helm template with it before
the settings file gives what generator render --profile gives. Helm does not
check a profile's rules or imposed values; the ValidatingAdmissionPolicy of
generator profile render has the API server do it.`,
		Example: `  generator profile values lab.yaml -o lab-values.yaml
  helm template chart -f lab-values.yaml -f settings.yaml`,
		Annotations: map[string]string{consequence: "nothing was written"},
		RunE: run(func(_ *cobra.Command, args []string) error {
			p, err := loadProfile(args)
			if err != nil {
				return err
			}
			values, err := p.Values()
			if err != nil {
				return err
			}
			data, err := sigsyaml.Marshal(values)
			if err != nil {
				return err
			}
			header := fmt.Sprintf("# The values of the profile %s: pass this file to helm template before the\n# settings file (-f this -f settings.yaml). Written by generator profile values.\n", p.Name())
			return writeOutput(s, file, append([]byte(header), data...))
		}),
	}
	cmd.Flags().StringVarP(&file, "output-file", "o", "", "write the values to this file (atomically) instead of standard output")
	return cmd
}

func newProfileGet(s Streams) *cobra.Command {
	var kube cluster.Flags
	var file string
	cmd := &cobra.Command{
		Use:   "get [-n NAMESPACE] [-o FILE]",
		Short: "Write the cluster's profile for a namespace as one profile file",
		Long: `Get reads the profile that check and submit apply to the jobs of a namespace
(-n, else your context's): the cluster's, in ConfigMap kube-public/torchwrap-profile,
refined by the namespace's, in ConfigMap NAMESPACE/torchwrap-profile. It writes
them as one profile file that applies as they do, for working offline:
generator render --profile FILE. It fails when the cluster has none.`,
		Example: `  generator profile get -o profile.yaml
  generator profile get -n team-a --context lab-a`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{consequence: "nothing was written"},
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			client, err := dial(s, &kube)
			if err != nil {
				return err
			}
			read, err := clusterProfile(cmd.Context(), client, client.Namespace)
			if err != nil {
				return err
			}
			p, unread := read.profile, read.unread
			if p == nil {
				why := unread
				if len(read.missing) > 0 {
					why = append(why, "no "+strings.Join(read.missing, " nor "))
				}
				if len(read.denied) > 0 {
					// What it could not read, it does not say is not there.
					return fmt.Errorf("the cluster at %s has no profile for namespace %s that you may read: %s",
						client.Server, client.Namespace, strings.Join(append(why, read.unknown()), "; "))
				}
				return fmt.Errorf("the cluster at %s has no profile for namespace %s: %s", client.Server, client.Namespace, strings.Join(why, "; "))
			}
			if len(read.denied) > 0 {
				unread = append(unread, read.unknown())
			}
			if len(unread) > 0 {
				sayUnread(s, unread, p)
			}
			header := fmt.Sprintf("The profile of namespace %s on the cluster at %s: %s.\n", client.Namespace, client.Server, p.Name())
			for _, why := range unread {
				header += "Not in it: " + why + ".\n"
			}
			data, err := p.File(header + "Written by generator profile get; use it with --profile.")
			if err != nil {
				return err
			}
			return writeOutput(s, file, data)
		}),
	}
	kube.Register(cmd.Flags())
	cmd.Flags().StringVarP(&file, "output-file", "o", "", "write the profile to this file (atomically) instead of standard output")
	return cmd
}

// writeOutput writes data to standard output, or to file (atomically,
// creating its folder) when one is named.
func writeOutput(s Streams, file string, data []byte) error {
	if file == "" {
		_, err := s.Out.Write(data)
		return err
	}
	return withFolder(file, func() error { return writeFile(file, data, true) })
}
