//go:build e2e && linux

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
)

// The namespaces of the guards scenario, each with one guard of its pods,
// and a LocalQueue default-queue of cluster-queue.
var guardNamespaces = map[string]string{
	"guard-restricted": `apiVersion: v1
kind: Namespace
metadata: {name: guard-restricted, labels: {pod-security.kubernetes.io/enforce: restricted}}`,
	"guard-baseline": `apiVersion: v1
kind: Namespace
metadata: {name: guard-baseline, labels: {pod-security.kubernetes.io/enforce: baseline}}`,
	"guard-quota": `apiVersion: v1
kind: ResourceQuota
metadata: {name: team-gpus, namespace: guard-quota}
spec: {hard: {requests.nvidia.com/gpu: 2, pods: 3}}`,
	"guard-limits": `apiVersion: v1
kind: LimitRange
metadata: {name: container-memory, namespace: guard-limits}
spec: {limits: [{type: Container, max: {memory: 2Gi}}]}`,
}

// guardMember is the user of MLBatch's team role (mlbatch-edit) in
// guard-quota: it may read its Namespace and events, but not its
// ResourceQuotas and LimitRanges, nor create pods.
const guardMember = "member-of-guard-quota"

// guardSettings are a job of pods of one GPU, which its AppWrapper (of a
// kind that has one) resets soon when its pods are not there.
func guardSettings(name, kind string, pods int) string {
	settings := fmt.Sprintf(`jobName: %s
jobKind: %s
queueName: default-queue
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
numPods: %d
numCpusPerPod: 100m
numGpusPerPod: 1
totalMemoryPerPod: 128Mi
mainProgram: train.py
`, name, kind, pods)
	if kind != "TrainJob" {
		settings += "admissionGracePeriodDuration: 10s\nretryPausePeriodDuration: 5s\nretryLimit: 1\n"
	}
	return settings
}

// guards is what a team's namespace refuses of a job's pods (Pod Security,
// a ResourceQuota, a LimitRange), which nothing refuses of the job itself:
// check says each at the settings line (testdata/guards, as the admin and
// under MLBatch's team role); a job of each kind applied without the check
// (generator render | kubectl apply) is told by status, the refusal as its
// cause, within a minute of its controller's first refusal, and again
// after the AppWrapper's reset; submit --wait of a job refused for good
// ends with exit 1; and a job with podSecurity: restricted (a JobSet: the
// training operator adds an init container of its own to a PyTorchJob's
// workers, which check says) runs to its end in the restricted namespace.
func (s *sim) guards(t *testing.T) {
	s.applyMLBatchRole(t)
	for ns, guard := range guardNamespaces {
		if strings.Contains(guard, "kind: Namespace") {
			kubectl(t, s.cluster, []byte(guard), "apply", "-f", "-")
		}
		s.ensureQueue(t, ns, "default-queue")
		if !strings.Contains(guard, "kind: Namespace") {
			kubectl(t, s.cluster, []byte(guard), "apply", "-f", "-")
		}
	}
	kubectl(t, s.cluster, nil, "create", "rolebinding", "team", "-n", "guard-quota", "--clusterrole", "mlbatch-edit", "--user", guardMember)
	member := s.memberKubeconfig(t, t.TempDir(), guardMember, "guard-quota")

	t.Run("guard-check", func(t *testing.T) {
		t.Parallel()
		root := cases.Path(t, "testdata", "guards")
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		for _, e := range entries {
			t.Run(e.Name(), func(t *testing.T) {
				dir := filepath.Join(root, e.Name())
				args := []string{"check", "-f", "settings.yaml"}
				if extra, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
					args = append(args, strings.Fields(strings.ReplaceAll(string(extra), "MEMBER", member))...)
				}
				r := s.generate(t, dir, args...)
				expect(t, filepath.Join(dir, "expected.txt"), []byte(strings.ReplaceAll(string(s.transcript(r)), member, "MEMBER")))
			})
		}
	})
	for _, kind := range []string{"PyTorchJob", "JobSet", "TrainJob"} {
		t.Run("guard-status-"+strings.ToLower(kind), func(t *testing.T) {
			t.Parallel()
			s.refusedJob(t, kind)
		})
	}
	t.Run("guard-submit-wait", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "settings.yaml"), []byte(guardSettings("quota-wait", "PyTorchJob", 4)), 0o644))
		r := s.generateWith(t, []string{"KUBECONFIG=" + member}, dir, "submit", "--wait", "-f", "settings.yaml")
		t.Logf("submit --wait as mlbatch-edit:\n%s%s", r.stdout, r.stderr)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, `ResourceQuota team-gpus, as PyTorchJob quota-wait says): exceeded quota: team-gpus`)
		require.Contains(t, r.stderr, "It is left as it is; delete it with generator delete quota-wait -n guard-quota")
		require.Contains(t, s.generate(t, dir, "delete", "quota-wait", "-n", "guard-quota").stdout, "deleted")
	})
	t.Run("guard-restricted-runs", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "settings.yaml"),
			[]byte(guardSettings("restricted-runs", "JobSet", 2)+"podSecurity: restricted\nsecurityContext: {runAsUser: 1000}\n"), 0o644))
		r := s.generate(t, dir, "submit", "--wait", "-f", "settings.yaml", "-n", "guard-restricted")
		require.Equal(t, 0, r.code, "%s%s", r.stdout, r.stderr)
		require.Contains(t, r.stdout, "Succeeded")
	})
}

// causeLine is status's line of the job's cause.
var causeLine = regexp.MustCompile(`(?m)^  cause: +(.*)$`)

// refusedJob applies a job of the kind in the restricted namespace without
// the check, as the chart's users do, and reads its status until it says
// the refusal of its pods as the job's cause, within a minute of the first
// refusal its controller said; a wrapped job, again after its reset.
func (s *sim) refusedJob(t *testing.T, kind string) {
	name := "refused-" + strings.ToLower(kind)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "settings.yaml"), []byte(guardSettings(name, kind, 2)), 0o644))
	manifest := s.render(t, filepath.Join(dir, "settings.yaml"), "--set", "namespace=guard-restricted")
	kubectl(t, s.cluster, manifest, "apply", "-f", "-")
	s.waitFor(t, "guard-restricted", name+"'s first refusal", 2*time.Minute, func() bool {
		return strings.Contains(kubectl(t, s.cluster, nil, "get", "events", "-n", "guard-restricted", "-o", "custom-columns=REASON:.reason,OBJECT:.involvedObject.name"), name)
	})
	told := func(after string, attempt int) {
		var lines string
		s.waitFor(t, "guard-restricted", name+"'s refusal told by status "+after, time.Minute, func() bool {
			lines = s.generate(t, dir, "status", name, "-n", "guard-restricted").stdout
			return strings.Contains(lines, `violates PodSecurity "restricted:latest"`) && strings.Contains(lines, fmt.Sprintf("cause:     attempt %d", attempt))
		})
		t.Logf("status %s:\n%s", after, lines)
		first := strings.SplitN(lines, "\n", 3)
		require.Regexp(t, `^  cause: +attempt \d+( of \d+)?: the API server refuses to create the job's pods \(Pod Security restricted \(latest\), as (PyTorchJob|Job) `+name, first[1], "the cause, first")
		require.Contains(t, causeLine.FindStringSubmatch(lines)[1], "allowPrivilegeEscalation != false", "whole")
		require.NotContains(t, lines, "unseen:")
		require.NotContains(t, lines, "FailedCreate", "said once")
	}
	told("after the first refusal", 1)
	// list shows the job Refused, and names it; logs says the refusal
	// where it says why there are no logs.
	var list, logs result
	s.waitFor(t, "guard-restricted", name+" Refused in list", time.Minute, func() bool {
		list = s.generate(t, dir, "list", "-n", "guard-restricted")
		return regexp.MustCompile(`(?m)^` + name + ` +\w+ +Refused `).MatchString(list.stdout)
	})
	require.Regexp(t, `the API server refuses the pods of .*`+name, list.stderr)
	s.waitFor(t, "guard-restricted", name+"'s refusal told by logs", time.Minute, func() bool {
		logs = s.generate(t, dir, "logs", name, "-n", "guard-restricted")
		return strings.Contains(logs.stderr, `violates PodSecurity "restricted:latest"`)
	})
	require.Contains(t, logs.stderr, "no logs yet: ")
	if kind != "TrainJob" {
		// The AppWrapper resets the job, whose pods are never there, and
		// its second attempt is refused too: the first is told before it,
		// by why.
		told("after the reset", 2)
		require.Contains(t, s.generate(t, dir, "status", name, "-n", "guard-restricted").stdout, "before:    attempt 1 of 2: the API server refuses to create the job's pods (Pod Security restricted (latest)")
	}
	resource := "appwrapper"
	if kind == "TrainJob" {
		resource = "trainjob"
	}
	kubectl(t, s.cluster, nil, "delete", resource, name, "-n", "guard-restricted", "--wait=false")
}
