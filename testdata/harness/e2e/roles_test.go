//go:build e2e && linux

package e2e_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/e2e"
)

// teamRole is a role a platform gives a team, bound with a RoleBinding in
// the team's namespace to a user who has nothing else: the ClusterRole,
// and the settings its jobs take (Kueue's batch-user role may not create
// AppWrappers: its users submit bare jobs).
type teamRole struct {
	name, clusterRole string
	settings          []string
}

// teamRoles are MLBatch's team role (testdata/rbac/mlbatch-edit-role.yaml),
// Kueue's batch-user role, Kubernetes' edit with what AppWrapper's roles
// aggregate into it, and the generator's own (generator access --roles),
// with its cluster-wide reads bound too; each in a namespace of
// e2e.RolesNamespaces, in that order.
var teamRoles = []teamRole{
	{name: "mlbatch", clusterRole: "mlbatch-edit"},
	{name: "kueue", clusterRole: "kueue-batch-user-role", settings: []string{"--set", "wrapper=none"}},
	{name: "edit", clusterRole: "edit"},
	{name: "torchwrap", clusterRole: cluster.UserRole},
}

// roleStep is one command of the roles scenario: its arguments (JOB and
// SHORT stand for the jobs' names, SETTINGS and SHORTSETTINGS for their
// settings files, WORKSPACE for a folder), the command of cluster.Uses
// whose rights it takes, and its exit code under each of teamRoles.
type roleStep struct {
	args  []string
	use   string
	codes [4]int
}

// Every command of the generator that talks to a cluster, as a member of a
// team: the outcome under each role, and never more than one line about
// rights. A job the role does not let its user submit is submitted by the
// administrator, as a colleague's would be, for the commands after.
var roleSteps = []roleStep{
	// edit may create AppWrappers, but AppWrapper's webhook refuses
	// those whose PyTorchJob its user may not create.
	{[]string{"check", "-f", "SETTINGS"}, "check", [4]int{0, 0, 1, 0}},
	{[]string{"submit", "-f", "SETTINGS"}, "submit", [4]int{0, 0, 1, 0}},
	// RUNNING: the job runs (the administrator waits for its pod).
	{[]string{"status", "JOB"}, "status", [4]int{0, 0, 0, 0}},
	{[]string{"status", "JOB", "-o", "json"}, "status", [4]int{0, 0, 0, 0}},
	{[]string{"list"}, "list", [4]int{0, 0, 0, 0}},
	{[]string{"list", "-A"}, "list -A", [4]int{0, 0, 0, 0}},
	// MLBatch's role grants pods/logs, which is not the logs' resource;
	// Kueue's grants no pods.
	{[]string{"logs", "JOB"}, "logs", [4]int{1, 1, 0, 0}},
	{[]string{"__complete", "status", ""}, "completion of names", [4]int{0, 0, 0, 0}},
	// Only the generator's own role may patch Kueue's Workloads.
	{[]string{"stop", "JOB"}, "stop, resume", [4]int{1, 1, 1, 0}},
	// A job that is not stopped needs nothing to resume, where the role
	// lets the user read its Workload.
	{[]string{"resume", "JOB"}, "stop, resume", [4]int{0, 0, 1, 0}},
	{[]string{"profile", "get"}, "profile get", [4]int{1, 1, 1, 1}},
	{[]string{"delete", "JOB"}, "delete", [4]int{0, 0, 0, 0}},
	{[]string{"submit", "--wait", "-f", "SHORTSETTINGS"}, "submit --wait", [4]int{0, 0, 1, 0}},
	{[]string{"logs", "-f", "SHORT"}, "logs -f", [4]int{1, 1, 0, 0}},
	{[]string{"delete", "SHORT"}, "delete", [4]int{0, 0, 0, 0}},
	// Kueue's role may not create ConfigMaps.
	{[]string{"submit", "-f", "SETTINGS", "--workspace", "WORKSPACE"}, "submit --workspace", [4]int{0, 1, 1, 0}},
	{[]string{"delete", "JOB"}, "delete", [4]int{0, 0, 0, 0}},
	// The pod here, its Secret read from the cluster (a torchrun of the
	// test's says what it sees); Kueue's role may not read Secrets.
	{[]string{"run", "--local", "-f", "LOCALSETTINGS", "--from-cluster", "--dir", "RUNDIR"}, "run --local --from-cluster", [4]int{0, 1, 0, 0}},
}

// rightsLine is a line that says what a role kept from a command, as
// opposed to the command's own error (Error: ...) or a problem found at a
// place in the settings.
var rightsLine = regexp.MustCompile(`RBAC`)
var placedOrError = regexp.MustCompile(`^(Error: |\S+:\d+:\d+: )`)

// roles runs roleSteps as a user of each of teamRoles, all at once. The
// job holds one GPU of e2e.RolesClusterQueue: stop frees it and resume
// takes it again, where the role lets them. Under the generator's own role,
// no request is refused, and each is one of cluster.Uses's rights of the
// command that made it (the commands' API logs).
func (s *sim) roles(t *testing.T) {
	s.applyMLBatchRole(t)
	kubectl(t, s.cluster, []byte(s.generate(t, t.TempDir(), "access", "--roles").stdout), "apply", "-f", "-")
	dir := t.TempDir()
	workspace := filepath.Join(dir, "workspace")
	require.NoError(t, os.MkdirAll(workspace, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(workspace, "train.py"), []byte("print('hello')\n"), 0o644))
	for i, role := range teamRoles {
		ns := e2e.RolesNamespaces[i]
		user := "member-of-" + ns
		s.ensureQueue(t, ns, "roles-queue")
		kubectl(t, s.cluster, nil, "create", "secret", "generic", "team-token", "-n", ns, "--from-literal=token=secret-of-"+ns)
		kubectl(t, s.cluster, nil, "create", "rolebinding", "team", "-n", ns, "--clusterrole", role.clusterRole, "--user", user)
		if role.clusterRole == cluster.UserRole {
			kubectl(t, s.cluster, nil, "create", "clusterrolebinding", "roles-reader", "--clusterrole", cluster.ReaderRole, "--user", user)
		}
		t.Run(role.name, func(t *testing.T) {
			t.Parallel()
			s.asTeamMember(t, i, role, user, ns, workspace)
		})
	}
}

// applyMLBatchRole applies MLBatch's team role (mlbatch-edit), once for
// the scenarios that bind it.
func (s *sim) applyMLBatchRole(t *testing.T) {
	s.mlbatchRole.Do(func() {
		kubectl(t, s.cluster, nil, "apply", "-f", cases.Path(t, "testdata", "rbac", "mlbatch-edit-role.yaml"))
	})
}

// memberKubeconfig writes, in dir, a kubeconfig that names the namespace
// and impersonates the user from the administrator's.
func (s *sim) memberKubeconfig(t *testing.T, dir, user, ns string) string {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	config, err := clientcmd.LoadFromFile(s.cluster.Kubeconfig)
	require.NoError(t, err)
	config.Contexts[config.CurrentContext].Namespace = ns
	config.AuthInfos[config.Contexts[config.CurrentContext].AuthInfo].Impersonate = user
	require.NoError(t, clientcmd.WriteToFile(*config, kubeconfig))
	return kubeconfig
}

// asTeamMember runs roleSteps as the user, whose kubeconfig names the
// namespace and impersonates the user from the administrator's.
func (s *sim) asTeamMember(t *testing.T, i int, role teamRole, user, ns, workspace string) {
	dir := t.TempDir()
	kubeconfig := s.memberKubeconfig(t, dir, user, ns)

	settings := func(name, runFor string) string {
		file := filepath.Join(dir, name+".settings.yaml")
		require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`jobName: %s
queueName: roles-queue
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
numPods: 1
numCpusPerPod: 100m
numGpusPerPod: 1
totalMemoryPerPod: 128Mi
mainProgram: train.py
nodeSelector:
  %s: %s
podAnnotations:
  sim.torchwrap.dev/run-for: %s
`, name, e2e.RackLabel, e2e.SideRack, runFor)), 0o644))
		return file
	}
	job, short := "long-"+role.name, "short-"+role.name
	local := filepath.Join(dir, "local.settings.yaml")
	require.NoError(t, os.WriteFile(local, []byte(`jobName: local
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
numPods: 1
numGpusPerPod: 0
mainProgram: train.py
environmentVariables:
- name: TEAM_TOKEN
  secret: {name: team-token, key: token}
`), 0o644))
	// A torchrun that says the Secret's value it was given.
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "torchrun"), []byte("#!/bin/sh\necho \"token: $TEAM_TOKEN\"\n"), 0o755))
	env := []string{"KUBECONFIG=" + kubeconfig, "PATH=" + bin + ":" + os.Getenv("PATH")}
	replacer := strings.NewReplacer("SHORTSETTINGS", settings(short, "3s"), "SETTINGS", settings(job, "10m"), "LOCALSETTINGS", local,
		"WORKSPACE", workspace, "RUNDIR", filepath.Join(dir, "run"), "SHORT", short, "JOB", job)
	kinds := []string{"AppWrapper", "PyTorchJob"}
	if slices.Contains(role.settings, "wrapper=none") {
		kinds = kinds[1:]
	}
	uses, err := cluster.Uses(ns, kinds...)
	require.NoError(t, err)

	for _, step := range roleSteps {
		var args []string
		for _, arg := range step.args {
			args = append(args, replacer.Replace(arg))
		}
		if args[0] == "check" || args[0] == "submit" {
			args = append(args, role.settings...)
		}
		r, requests := s.countedWith(t, env, dir, args...)
		command := strings.Join(step.args, " ")
		t.Logf("%s as %s: exit %d\n%s%s", command, role.clusterRole, r.code, r.stdout, r.stderr)
		require.Equal(t, step.codes[i], r.code, "generator %s as %s:\n%s%s", command, role.clusterRole, r.stdout, r.stderr)
		var rights []string
		for _, line := range strings.Split(r.stderr, "\n") {
			if rightsLine.MatchString(line) && !placedOrError.MatchString(line) {
				rights = append(rights, line)
			}
		}
		require.LessOrEqual(t, len(rights), 1, "generator %s as %s says more than one line about rights:\n%s", command, role.clusterRole, r.stderr)
		if role.clusterRole == cluster.UserRole {
			s.requestsAllowed(t, uses, step.use, requests)
		}

		switch step.args[0] {
		case "submit":
			if r.code != 0 {
				// A colleague's job, for the commands after.
				require.Zero(t, s.generate(t, dir, append([]string{"submit", "--kubeconfig", "ADMIN", "-n", ns}, args[1:]...)...).code)
			}
			name := job
			if slices.Contains(step.args, "SHORTSETTINGS") {
				name = short
			}
			s.waitFor(t, ns, name+" admitted", 2*time.Minute, func() bool { return s.workloads(t, ns)[name].admitted })
			if name == job {
				// RUNNING: its pod runs, for the commands after (logs).
				s.waitFor(t, ns, name+"'s pod running", 2*time.Minute, func() bool {
					return kubectl(t, s.cluster, nil, "get", "pods", "-n", ns, "-l", "training.kubeflow.org/job-name="+name,
						"--field-selector", "status.phase=Running", "-o", "name") != ""
				})
			}
		case "stop":
			want := r.code != 0 // a refused stop leaves the job holding its quota
			s.waitFor(t, ns, fmt.Sprintf("%s admitted: %t", job, want), time.Minute, func() bool { return s.workloads(t, ns)[job].admitted == want })
		case "resume":
			s.waitFor(t, ns, job+" admitted again", time.Minute, func() bool { return s.workloads(t, ns)[job].admitted })
		case "delete":
			// Nothing left of the job.
			s.waitFor(t, ns, "nothing left", time.Minute, func() bool {
				out := kubectl(t, s.cluster, nil, "get", "appwrappers,pytorchjobs,workloads,pods,configmaps", "-n", ns, "-o", "name")
				return !strings.Contains(out, "long-") && !strings.Contains(out, "short-")
			})
		case "__complete":
			require.Contains(t, r.stdout, job, "the completion of names")
		case "run":
			if r.code == 0 {
				require.Contains(t, r.stdout, "token: secret-of-"+ns)
			} else {
				require.Contains(t, r.stderr, "the secret team-token")
			}
		}
	}
}

// countedWith runs the generator as counted does, with more variables in
// its environment.
func (s *sim) countedWith(t *testing.T, env []string, dir string, args ...string) (result, []cluster.APIRequest) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "api.jsonl")
	r := s.generateWith(t, append(env, cluster.APILogVariable+"="+path), dir, args...)
	return r, readAPILog(t, path)
}

// requestsAllowed checks that no request was refused (but list -A's
// across namespaces), and that each is one
// of the rights that cluster.Uses gives the command (use: its Needs, Helps
// and Asks), but those any
// user has: discovery, and asking what one may do.
func (s *sim) requestsAllowed(t *testing.T, uses []cluster.Use, use string, requests []cluster.APIRequest) {
	t.Helper()
	i := slices.IndexFunc(uses, func(u cluster.Use) bool { return u.Command == use })
	require.GreaterOrEqual(t, i, 0, "cluster.Uses has no command %q", use)
	rights := slices.Concat(uses[i].Needs, uses[i].Helps, uses[i].Asks)
	for _, req := range requests {
		asked, ok := rightOf(t, req)
		// list -A lists across namespaces first, which a role bound in
		// a namespace does not allow, then the kubeconfig's namespaces.
		across := use == "list -A" && asked.Namespace == ""
		assert.False(t, req.Status == 403 && !across, "%s %s refused under %s", req.Method, req.URL, cluster.UserRole)
		if !ok {
			continue
		}
		// A right to one object by name gives no other.
		assert.True(t, slices.ContainsFunc(rights, func(r cluster.Right) bool {
			named := r.Name
			r.Name = asked.Name
			return r == asked && (named == "" || named == asked.Name)
		}), "%s %s (%s) is not among the rights of %q in cluster.Uses", req.Method, req.URL, asked, use)
	}
}

// rightOf is the right a request takes, as the API server's authorizer
// reads it; false for one every user may make.
func rightOf(t *testing.T, req cluster.APIRequest) (cluster.Right, bool) {
	u, err := url.Parse(req.URL)
	require.NoError(t, err)
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return cluster.Right{}, false // discovery
	}
	var namespace string
	if len(parts) >= 2 && parts[0] == "namespaces" {
		namespace = parts[1]
		parts = parts[2:]
		if len(parts) == 0 { // the namespace itself
			parts = []string{"namespaces", namespace}
		}
	}
	resource := parts[0]
	if resource == "selfsubjectaccessreviews" {
		return cluster.Right{}, false
	}
	var name string
	if len(parts) >= 2 {
		name = parts[1]
	}
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	verb := map[string]string{"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[req.Method]
	switch {
	case verb != "":
	case u.Query().Get("watch") == "true":
		verb = "watch"
	case name != "":
		verb = "get"
	default:
		verb = "list"
	}
	return cluster.Right{Verb: verb, Resource: schema.GroupResource{Group: group, Resource: resource}, Namespace: namespace, Name: name}, true
}
