//go:build e2e && linux

package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/torchlogs"
)

// failingSettings is a job of the scenarios whose pods' statuses they
// write, on the fake nodes (cascade, two-pods): its name and namespace,
// pods of processes (torchrun's nprocPerNode) on one node, running for an
// hour unless their statuses say otherwise, and retries; the AppWrapper
// waits 30 s after a pod fails before it resets the job, which leaves
// status the failed pods to read.
const failingSettings = `jobName: %s
namespace: %s
queueName: default-queue
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
numPods: %d
numCpusPerPod: 100m
numGpusPerPod: 0
totalMemoryPerPod: 128Mi
torchrun:
  nprocPerNode: %d
mainProgram: train.py
nodeSelector:
  kubernetes.io/hostname: %s
retryLimit: %d
failureGracePeriodDuration: 30s
retryPausePeriodDuration: 1s
podAnnotations:
  sim.torchwrap.dev/run-for: 1h
`

// sideNode is the node of those jobs, the last one, of e2e.SideRack.
const sideNode = "gpu-node-15"

// A job of 64 pods of 8 processes fails as a large job does: a rank of one
// pod raises; three pods whose ranks talked to it lose their peer at once,
// and end first, while torchrun stops the first pod's other processes; ten
// minutes later NCCL's watchdog ends the 60 others. Each pod's training
// container is written ended as the kubelet writes it, with its last lines
// as its termination message (testdata/torchlogs). status names the rank
// that raised, counts the others by kind, names the node, within its bound
// of requests. Then the pod that raised is written Failed: the
// PyTorchJob fails, and the AppWrapper resets it at once (a failed
// component has no grace period), and the second attempt fails the same
// way on the same node: status says the node may be at fault. Once the
// job has failed and its pods are gone, status tells the same from what it
// kept.
func (s *sim) cascade(t *testing.T) {
	// Its failures are on one node in both its attempts.
	const namespace, name, pods, node = "sim-cascade", "cascade", 64, sideNode
	s.ensureQueue(t, namespace, "default-queue")
	dir := t.TempDir()
	file := filepath.Join(dir, name+".settings.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(failingSettings, name, namespace, pods, 8, node, 1)), 0o644))
	r := s.generate(t, dir, "submit", "-f", file)
	require.Zero(t, r.code, r.stderr)
	defer kubectl(t, s.cluster, nil, "delete", "appwrapper", name, "-n", namespace, "--ignore-not-found", "--wait=true")

	for attempt := 1; attempt <= 2; attempt++ {
		byMember := s.cascadePods(t, namespace, name, pods, attempt-1)
		// worker-16 raises in the first attempt, worker-17 in the second,
		// with another error: the node may be at fault.
		first := 15 + attempt
		raised := time.Now().UTC().Add(-11 * time.Minute).Truncate(time.Second)
		for member, pod := range byMember {
			s.patchStatus(t, namespace, pod, map[string]any{"containerStatuses": []map[string]any{cascadeEnd(member, first, raised, raisedErrors[attempt-1])}})
		}
		r, requests := s.counted(t, dir, "status", name, "-n", namespace)
		require.Zero(t, r.code, r.stderr)
		t.Logf("status of attempt %d:\n%s", attempt, r.stdout)
		rank := 8*(first+1) + 5
		require.Contains(t, r.stdout, fmt.Sprintf("\n  cause:     attempt %d of 2 failed: rank %d (worker-%d, local rank 5) exited 1: %s; "+
			"63 other pods failed after it: 60 NCCL timeouts, 3 lost peers", attempt, rank, first, raisedErrors[attempt-1]))
		if attempt == 1 {
			require.Contains(t, r.stdout, "\n  node:      "+node+"\n")
		} else {
			require.Contains(t, r.stdout, "\n  node:      "+node+", where attempts 1 and 2 failed first: the node may be at fault; keep the job off it (hostIgnoreList: ["+node+"] in its settings)")
			require.Contains(t, r.stdout, fmt.Sprintf("\n  before:    attempt 1 of 2 failed: rank %d (worker-16, local rank 5) exited 1: ", 8*17+5))
		}
		logs := 0
		for _, req := range requests {
			if strings.HasSuffix(strings.Split(req.URL, "?")[0], "/log") {
				logs++
			}
		}
		t.Logf("status of the failing attempt %d of %d pods: %d requests (%d for logs)", attempt, pods, len(requests), logs)
		require.LessOrEqual(t, logs, 1, "status reads at most one log")
		require.LessOrEqual(t, len(requests), 10, "status's requests, as with a job doing well (BENCHMARKS.md)")
		s.patchStatus(t, namespace, byMember[fmt.Sprintf("worker-%d", first)], map[string]any{"phase": "Failed"})
	}

	// Failed for good, its pods gone: what status kept says the same.
	s.waitFor(t, namespace, name+" failed, its pods gone", 4*time.Minute, func() bool {
		return s.appWrapperPhase(t, namespace, name) == "Failed" && len(s.jobPods(t, namespace, name)) == 0
	})
	r = s.generate(t, dir, "status", name, "-n", namespace)
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf("\n  cause:     attempt 2 of 2 failed: rank %d (worker-17, local rank 5) exited 1: %s; "+
		"63 other pods failed after it: 60 NCCL timeouts, 3 lost peers; no retries left\n", 8*18+5, raisedErrors[1]))
	require.Contains(t, r.stdout, "\n  node:      "+node+", where attempts 1 and 2 failed first: ")
}

// raisedErrors are the errors the rank that fails first raises, in the
// cascade's first attempt and in its second.
var raisedErrors = []string{"RuntimeError: loss is nan at step 4021", "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"}

// cascadeEnd is the status of the training container of a pod of the
// cascade's job (member), when a rank of worker-first raised err at raised: it
// ended with its last lines as its termination message. That pod's
// container ends 31 s after (torchrun stops its other processes);
// worker-(first+1) to worker-(first+3) lose their peer 1 s after, and end
// first; the others' collectives time out ten minutes after.
func cascadeEnd(member string, first int, raised time.Time, err string) map[string]any {
	rank := 0
	if index, ok := strings.CutPrefix(member, "worker-"); ok {
		fmt.Sscan(index, &rank)
		rank++
	}
	worker := rank - 1
	var lines []string
	var ended time.Time
	code := 1
	switch {
	case worker == first:
		lines, ended = torchlogs.Raises(8*rank+5, 5, raised, err), raised.Add(31*time.Second)
	case worker > first && worker <= first+3:
		lines, ended = torchlogs.GlooLostPeer(8*rank, 0, raised.Add(time.Second)), raised.Add(2*time.Second)
	default:
		at := raised.Add(10*time.Minute + time.Duration(rank)*time.Second)
		lines, ended, code = torchlogs.NCCLTimeout(8*rank+1, 1, at), at.Add(time.Second), 134
	}
	return map[string]any{
		"name": "pytorch", "image": "ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126", "ready": false, "restartCount": 0,
		"state": map[string]any{"terminated": map[string]any{"exitCode": code, "reason": "Error", "message": strings.Join(lines, "\n"),
			"startedAt": ended.Add(-time.Hour).Format(time.RFC3339), "finishedAt": ended.Format(time.RFC3339)}},
	}
}

// patchStatus writes fields of a pod's status, as its kubelet does.
func (s *sim) patchStatus(t *testing.T, namespace, pod string, status map[string]any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"status": status})
	require.NoError(t, err)
	kubectl(t, s.cluster, nil, "patch", "pod", pod, "-n", namespace, "--subresource=status", "--type=merge", "-p", string(patch))
}

// jobPods are the pods of a PyTorchJob, by name, with their place in the job
// (master-0, worker-3) and phase.
func (s *sim) jobPods(t *testing.T, namespace, job string) map[string][2]string {
	t.Helper()
	out := kubectl(t, s.cluster, nil, "get", "pods", "-n", namespace, "-l", "training.kubeflow.org/job-name="+job, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.labels.training\.kubeflow\.org/replica-type}-{.metadata.labels.training\.kubeflow\.org/replica-index} {.status.phase}{"\n"}{end}`)
	found := map[string][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			found[f[0]] = [2]string{f[1], f[2]}
		}
	}
	return found
}

// cascadePods waits until the job runs its pods, all of them, after its
// AppWrapper has reset it retries times, and gives them by member.
func (s *sim) cascadePods(t *testing.T, namespace, job string, pods, retries int) map[string]string {
	t.Helper()
	var byMember map[string]string
	s.waitFor(t, namespace, fmt.Sprintf("%s running, %d retries", job, retries), 4*time.Minute, func() bool {
		aw := s.get(t, namespace, "appwrapper", job)
		status, _ := aw["status"].(map[string]any)
		resets, _ := status["resettingCount"].(float64)
		byMember = map[string]string{}
		for pod, p := range s.jobPods(t, namespace, job) {
			if p[1] == "Running" {
				byMember[p[0]] = pod
			}
		}
		return int(resets) == retries && len(byMember) == pods
	})
	return byMember
}
