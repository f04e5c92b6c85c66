//go:build e2e && linux

package e2e_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/fidelity"
)

// The namespace of the tests of a profile, which testdata/profile/team.yaml
// is for, and one that only the cluster's profile binds.
const (
	profileNamespace = "sim-profile"
	otherNamespace   = "elsewhere"
)

// The messages of the rules of testdata/profile, as the API server gives
// them.
const (
	clusterGPUs     = "the nodes here have 8 GPUs; ask for 8 or fewer a pod (the profile's rule on numGpusPerPod: at most 8)"
	teamGPUs        = "team A's nodes are shared; ask for 4 GPUs a pod at most (the profile's rule on numGpusPerPod: at most 4)"
	clusterPods     = "a job of more than 64 pods needs a reservation; ask the platform team (the profile's rule on numPods: at most 64)"
	clusterPriority = `these are the cluster's PriorityClasses (the profile's rule on priority: one of "default-priority", "low-priority", "high-priority")`
	teamPriority    = `high-priority needs the platform team's approval; ask in #platform (the profile's rule on priority: one of "default-priority", "low-priority")`
	clusterImage    = `images come from ghcr.io, quay.io or T9k's public images on Docker Hub (the profile's rule on containerImage: matching ^(ghcr\.io|quay\.io|t9kpublic)/)`
	teamImage       = `team A's images are on ghcr.io (the profile's rule on containerImage: matching ^ghcr\.io/)`
	teamQueue       = `team A's jobs are queued in team-a-queue (the profile's rule on queueName: imposed "team-a-queue")`
)

// TestProfilePolicyOnARealAPIServer installs the profiles of testdata/profile
// as generator profile render writes them (the cluster's, and the one of
// namespace sim-profile) on a real kube-apiserver with the CRDs of the kinds,
// and checks what its ValidatingAdmissionPolicies decide: every example and
// starter rendered under the cluster's profile is admitted, and so is the job
// of minimal.settings.yaml rendered under both; hand-written AppWrappers,
// PyTorchJobs, JobSets, TrainJobs and PyTorchTrainingJobs that break a rule
// are refused with its message, where the rule binds, and admitted where it
// does not; an update that leaves a rule's values as they were is admitted
// even when they break it, one that changes them is checked; a job that an
// AppWrapper made is left to its AppWrapper's check.
func TestProfilePolicyOnARealAPIServer(t *testing.T) {
	cluster := startCluster(t)
	generator := cases.BuildGenerator(t)
	require.NoError(t, cluster.CreateAll(jobCRDs(t, fidelity.AppWrapperCRD, fidelity.PyTorchJobCRD, fidelity.JobSetCRD, fidelity.TrainJobCRD)))
	for _, ns := range []string{profileNamespace, otherNamespace, "legacy"} {
		ensureNamespace(t, cluster, ns)
	}
	clusterProfile, teamProfile := cases.Path(t, "testdata", "profile", "cluster.yaml"), cases.Path(t, "testdata", "profile", "team.yaml")

	// A job made before the profile, which breaks its rules.
	legacy := byHand(t, "pytorchjob", map[string]string{"GPUS": "16"})
	kubectl(t, cluster, legacy, "create", "-n", "legacy", "-f", "-")

	kubectl(t, cluster, cases.Run(t, nil, generator, "profile", "render", clusterProfile, "--cluster"), "apply", "-f", "-")
	kubectl(t, cluster, cases.Run(t, nil, generator, "profile", "render", teamProfile, "-n", profileNamespace), "apply", "-f", "-")
	// The API server enforces a policy once its informers have it: 6 GPUs
	// a pod break the namespace's rule, 16 the cluster's.
	six, sixteen := byHand(t, "pytorchjob", map[string]string{"GPUS": "6"}), byHand(t, "pytorchjob", map[string]string{"GPUS": "16"})
	require.Eventually(t, func() bool {
		_, err := cluster.Kubectl(six, "create", "--dry-run=server", "-n", profileNamespace, "-f", "-")
		_, errOther := cluster.Kubectl(sixteen, "create", "--dry-run=server", "-n", otherNamespace, "-f", "-")
		return err != nil && strings.Contains(err.Error(), teamGPUs) && errOther != nil && strings.Contains(errOther.Error(), clusterGPUs)
	}, time.Minute, 200*time.Millisecond, "the policies are not enforced")

	t.Run("rendered under the profile", func(t *testing.T) {
		for _, example := range append(cases.Examples(t), cases.Starters(t)...) {
			manifest := cases.Run(t, nil, generator, "render", "-f", example, "--profile", clusterProfile)
			obj := jsonObject(t, cases.Objects(t, manifest)[0])
			ensureNamespace(t, cluster, namespaceOf(obj))
			kubectl(t, cluster, manifest, "create", "--dry-run=server", "-f", "-")
		}
		manifest := cases.Run(t, nil, generator, "render", "-f", cases.Path(t, "testdata", "profile", "minimal.settings.yaml"), "--profile", clusterProfile, "--profile", teamProfile)
		kubectl(t, cluster, manifest, "create", "--dry-run=server", "-n", profileNamespace, "-f", "-")
	})

	t.Run("by hand", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			values map[string]string
			// team and other are the messages in profileNamespace and in
			// otherNamespace (none: admitted); the API server says one of
			// them, the first policy's that refuses.
			team, other []string
			// kinds the case is not for (TrainJob sets no priorityClassName).
			not []string
		}{
			{name: "as the profiles want"},
			{name: "6 GPUs a pod", values: map[string]string{"GPUS": "6"}, team: []string{teamGPUs}},
			{name: "16 GPUs a pod", values: map[string]string{"GPUS": "16"}, team: []string{clusterGPUs, teamGPUs}, other: []string{clusterGPUs}},
			{name: "16 AMD GPUs a pod", values: map[string]string{"GPUS": "16", "ACCEL": "amd.com/gpu"}, team: []string{clusterGPUs, teamGPUs}, other: []string{clusterGPUs}},
			{name: "16 Ascend NPUs a pod", values: map[string]string{"GPUS": "16", "ACCEL": "huawei.com/Ascend910"}, team: []string{clusterGPUs, teamGPUs}, other: []string{clusterGPUs}},
			{name: "100 pods", values: map[string]string{"SCALE": "100"}, team: []string{clusterPods}, other: []string{clusterPods}},
			{name: "high-priority", values: map[string]string{"PRIORITY": "high-priority"}, team: []string{teamPriority}, not: []string{"trainjob"}},
			{name: "a priority the cluster has not", values: map[string]string{"PRIORITY": "urgent"}, team: []string{clusterPriority, teamPriority}, other: []string{clusterPriority}, not: []string{"trainjob"}},
			{name: "an image of quay.io", values: map[string]string{"IMAGE": "quay.io/team/train:1"}, team: []string{teamImage}},
			{name: "an image of Docker Hub", values: map[string]string{"IMAGE": "docker.io/library/python:3"}, team: []string{clusterImage, teamImage}, other: []string{clusterImage}},
			{name: "another queue", values: map[string]string{"QUEUE": "kueue.x-k8s.io/queue-name: other"}, team: []string{teamQueue}},
			{name: "no queue", values: map[string]string{"QUEUE": ""}, team: []string{teamQueue}},
		} {
			for _, kind := range []string{"appwrapper", "pytorchjob", "jobset", "trainjob", "pytorchtrainingjob"} {
				if slices.Contains(c.not, kind) {
					continue
				}
				t.Run(c.name+"/"+kind, func(t *testing.T) {
					obj := byHand(t, kind, c.values)
					for ns, want := range map[string][]string{profileNamespace: c.team, otherNamespace: c.other} {
						out, err := cluster.Kubectl(obj, "create", "--dry-run=server", "-n", ns, "-f", "-")
						if len(want) == 0 {
							require.NoError(t, err, "in %s: %s", ns, out)
							continue
						}
						require.Error(t, err, "in %s", ns)
						require.True(t, slices.ContainsFunc(want, func(m string) bool { return strings.Contains(err.Error(), m) }), "in %s, none of %q in: %v", ns, want, err)
					}
				})
			}
		}
	})

	t.Run("updates", func(t *testing.T) {
		// A label changes, the GPUs do not: admitted, though they break
		// the rule; then the GPUs change, to another number that breaks it.
		kubectl(t, cluster, nil, "label", "-n", "legacy", "pytorchjob", "by-hand", "team=a")
		_, err := cluster.Kubectl(nil, "patch", "-n", "legacy", "pytorchjob", "by-hand", "--type=json",
			"-p", `[{"op": "replace", "path": "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0/resources/limits/nvidia.com~1gpu", "value": "12"}]`)
		require.ErrorContains(t, err, clusterGPUs)
	})

	t.Run("made by an AppWrapper", func(t *testing.T) {
		job := strings.Replace(string(byHand(t, "pytorchjob", map[string]string{"GPUS": "16", "QUEUE": ""})),
			"  name: by-hand\n", "  name: by-hand\n  ownerReferences: [{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, name: by-hand, uid: 00000000-0000-0000-0000-000000000001, controller: true}]\n", 1)
		kubectl(t, cluster, []byte(job), "create", "--dry-run=server", "-n", profileNamespace, "-f", "-")
	})
}

// byHand is the hand-written job of a kind (testdata/profile/objects), with
// values for its ${...}: by default, as the profiles want.
func byHand(t *testing.T, kind string, values map[string]string) []byte {
	t.Helper()
	data, err := os.ReadFile(cases.Path(t, "testdata", "profile", "objects", kind+".yaml"))
	require.NoError(t, err)
	all := map[string]string{"QUEUE": "kueue.x-k8s.io/queue-name: team-a-queue", "PRIORITY": "default-priority", "IMAGE": "ghcr.io/team/train:1", "GPUS": "2", "ACCEL": "nvidia.com/gpu", "SCALE": "1"}
	for k, v := range values {
		all[k] = v
	}
	text := os.Expand(string(data), func(key string) string { return all[key] })
	require.NotContains(t, text, "${", filepath.Base(kind))
	return []byte(text)
}
