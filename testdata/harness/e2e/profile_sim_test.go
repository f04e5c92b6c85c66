//go:build e2e && linux

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/helmcli"
)

// profile gives the simulated cluster the profiles of testdata/profile, as
// an administrator does with generator profile render: the cluster's
// (ConfigMap kube-public/torchwrap-profile, a Role that lets every user read
// it, and its ValidatingAdmissionPolicy) and the one of namespace
// profileNamespace (its defaults: RoCE GDR, the NCCL and topology ConfigMaps,
// the programs' claim; the queue imposed; rules on GPUs, priorities and
// images). There, minimal.settings.yaml (a name, an image, pods and a
// program) checks, is submitted and runs to its end on the process nodes
// with the profiles' values, and against.settings.yaml is refused with the
// profiles' messages at its own lines; the API server refuses the same job
// rendered without the profile; the researcher, who may read the cluster's
// profile but not the namespace's, is told so. It runs alone, after the other
// scenarios: the cluster's profile binds every namespace while it is there,
// and it is taken away at the end.
func (s *sim) profile(t *testing.T) {
	dir := cases.Path(t, "testdata", "profile")
	expected := func(name string) string { return filepath.Join(dir, "sim", name+".txt") }
	s.ensureQueue(t, profileNamespace, "")
	kubectl(t, s.cluster, []byte(`apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team-a-queue, namespace: `+profileNamespace+`}
spec: {clusterQueue: process-cq}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: nccl-netwk-env-vars, namespace: `+profileNamespace+`}
data: {NCCL_IB_HCA: sim}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: nvidia-topo-gdr, namespace: `+profileNamespace+`}
data: {virtualTopology.xml: <system/>}
`), "create", "-f", "-")
	require.NoError(t, s.cluster.ProgramsClaim(profileNamespace))
	// The chart mounts the topology file at a fixed path, which a process
	// node binds over in the pod's mount namespace (as it binds /tmp):
	// the mount point, empty, must be there. It goes again at the end,
	// unless it was there already.
	if _, err := os.Stat(topologyMount); os.IsNotExist(err) {
		require.NoError(t, os.Mkdir(topologyMount, 0o755))
		t.Cleanup(func() { os.Remove(topologyMount) })
	}

	for _, install := range [][]string{{"cluster.yaml", "--cluster"}, {"team.yaml", "-n", profileNamespace}} {
		r := s.generate(t, dir, append([]string{"profile", "render"}, install...)...)
		require.Equal(t, 0, r.code, r.stderr)
		kubectl(t, s.cluster, []byte(r.stdout), "apply", "-f", "-")
		t.Cleanup(func() { s.cluster.Kubectl([]byte(r.stdout), "delete", "--ignore-not-found", "-f", "-") })
	}
	// The same job rendered without the profiles breaks its rules (its
	// queue, its GPUs): the API server refuses it once it enforces them.
	unprofiled := s.render(t, filepath.Join(dir, "minimal.settings.yaml"))
	require.Eventually(t, func() bool {
		_, err := s.cluster.Kubectl(unprofiled, "create", "--dry-run=server", "-n", profileNamespace, "-f", "-")
		return err != nil && strings.Contains(err.Error(), "team A's jobs are queued in team-a-queue")
	}, time.Minute, 200*time.Millisecond, "the namespace's policy is not enforced")

	t.Run("check", func(t *testing.T) {
		expect(t, expected("check"), s.transcript(s.generate(t, dir, "check", "-f", "minimal.settings.yaml", "-n", profileNamespace, "--kubeconfig", "ADMIN")))
		expect(t, expected("against"), s.transcript(s.generate(t, dir, "check", "-f", "against.settings.yaml", "-n", profileNamespace, "--kubeconfig", "ADMIN")))
	})

	t.Run("submit", func(t *testing.T) {
		r := s.generate(t, dir, "submit", "-f", "minimal.settings.yaml", "-n", profileNamespace, "--kubeconfig", "ADMIN", "--wait", "--timeout", "4m")
		if r.code != 0 {
			state, _ := s.cluster.Kubectl(nil, "get", "appwrappers,pytorchjobs,workloads,pods", "-n", profileNamespace, "-o", "wide")
			events, _ := s.cluster.Kubectl(nil, "get", "events", "-n", profileNamespace)
			t.Logf("%s\n%s", state, events)
		}
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "AppWrapper profiled: Succeeded, pods succeeded 2/2\n", r.stdout)
		// The AppWrapper in the cluster has what the profiles give: the
		// queue, the RDMA devices, the NCCL variables, the topology file,
		// the programs' claim, /dev/shm's size.
		aw := s.get(t, profileNamespace, "appwrapper", "profiled")
		text := string(mustJSON(t, aw))
		for _, want := range []string{`"kueue.x-k8s.io/queue-name":"team-a-queue"`, `"nvidia.com/roce_gdr":2`, `"configMapRef":{"name":"nccl-netwk-env-vars"}`,
			`"configMap":{"name":"nvidia-topo-gdr"}`, `"claimName":"sim-programs"`, `"sizeLimit":"16Gi"`} {
			require.Contains(t, text, want)
		}
		// The cluster's profile, saved for working offline, renders the
		// same job as the one submitted.
		r = s.generate(t, dir, "profile", "get", "-n", profileNamespace, "--kubeconfig", "ADMIN")
		require.Equal(t, 0, r.code, r.stderr)
		saved := filepath.Join(t.TempDir(), "profile.yaml")
		require.NoError(t, os.WriteFile(saved, []byte(r.stdout), 0o644))
		offline := cases.Objects(t, s.render(t, filepath.Join(dir, "minimal.settings.yaml"), "--profile", saved))[0]
		require.Equal(t, component(jsonObject(t, offline)), component(aw))
	})

	t.Run("helm", func(t *testing.T) {
		// The cluster's profile as a values file, before the settings:
		// Helm renders the job that submit gave.
		saved := filepath.Join(t.TempDir(), "profile.yaml")
		r := s.generate(t, dir, "profile", "get", "-n", profileNamespace, "--kubeconfig", "ADMIN", "-o", saved)
		require.Equal(t, 0, r.code, r.stderr)
		r = s.generate(t, dir, "profile", "values", saved)
		require.Equal(t, 0, r.code, r.stderr)
		values := filepath.Join(t.TempDir(), "profile-values.yaml")
		require.NoError(t, os.WriteFile(values, []byte(r.stdout), 0o644))
		submitted := component(s.get(t, profileNamespace, "appwrapper", "profiled"))
		chart := cases.Path(t, "chart")
		for i, helm := range helmcli.Both(t) {
			rendered := cases.Objects(t, helm.Template(t, chart, values, filepath.Join(dir, "minimal.settings.yaml")))
			require.Equal(t, component(jsonObject(t, rendered[0])), submitted, helm.Name)
			// Settings that break the profile's rules, installed by Helm
			// without its values: the API server's policy refuses them.
			// A release of its own each: the failed one is kept.
			release := fmt.Sprintf("against-h%d", i+3)
			out, errOut, err := helm.Run("install", release, chart, "-f", filepath.Join(dir, "against.settings.yaml"),
				"--set", "jobName=against", "-n", profileNamespace, "--kubeconfig", s.cluster.Kubeconfig)
			t.Logf("%s: helm install %s chart -f against.settings.yaml --set jobName=against -n %s\n%s%s", helm.Name, release, profileNamespace, out, errOut)
			require.Error(t, err, helm.Name)
			helm.Must(t, "uninstall", release, "-n", profileNamespace, "--kubeconfig", s.cluster.Kubeconfig)
			// They break both policies' rules (the image; the queue
			// first): the API server says the first broken rule of the
			// first policy that refuses, in no fixed order of policies.
			require.Contains(t, errOut, "is forbidden: ValidatingAdmissionPolicy", helm.Name)
			require.True(t, slices.ContainsFunc([]string{clusterImage, teamQueue}, func(m string) bool { return strings.Contains(errOut, m) }), "%s: neither rule's message", helm.Name)
		}
	})

	t.Run("researcher", func(t *testing.T) {
		expect(t, expected("researcher"), s.transcript(s.generate(t, dir, "profile", "get", "-n", profileNamespace, "--kubeconfig", "RESEARCHER")))
	})
}

// topologyMount is where the chart mounts a topology file
// (topologyFileConfigMap).
const topologyMount = "/var/run/nvidia-topologyd"

// component is the job an AppWrapper wraps, as its template holds it.
func component(aw map[string]any) any {
	return aw["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)["template"]
}
