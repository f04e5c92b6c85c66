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

// Two pods of 4 processes, no retry (failingSettings), the root cause in one
// and its consequences in the other, as torch 2.11 writes them
// (pkg/failure/testdata/two-pods-cpu): rank 2 of master-0 exits 3, the four
// ranks of worker-0 lose their peer. Both
// training containers are written ended in one second, as the kubelet
// writes them, with those lines as their termination messages (kwok serves
// no logs here: a follower reads the same lines from a pod's log), one pod
// first, then the other, then both pods Failed in that order; once with
// the worker first, once with the master first, at once. Whichever ended
// first, submit --wait tells rank 2's exit as the job's failure, and
// status, once the pods are gone, rank 2's exit with the worker's lost
// peers after it.
func (s *sim) twoPods(t *testing.T) {
	const namespace = "sim-two-pods"
	s.ensureQueue(t, namespace, "default-queue")
	logs := map[string]string{}
	for _, member := range []string{"master-0", "worker-0"} {
		data, err := os.ReadFile(cases.Path(t, "pkg", "failure", "testdata", "two-pods-cpu", member+".log"))
		require.NoError(t, err)
		logs[member] = strings.TrimRight(string(data), "\n")
	}
	for _, order := range [][]string{{"worker-0", "master-0"}, {"master-0", "worker-0"}} {
		name := "two-pods-" + strings.TrimSuffix(order[0], "-0") + "-first"
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := filepath.Join(dir, name+".settings.yaml")
			require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(failingSettings, name, namespace, 2, 4, sideNode, 0)), 0o644))
			follower := s.background(t, "submit", "-f", file, "--kubeconfig", "ADMIN", "--wait", "--timeout", "5m")
			defer kubectl(t, s.cluster, nil, "delete", "appwrapper", name, "-n", namespace, "--ignore-not-found", "--wait=true")
			var byMember map[string]string
			s.waitFor(t, namespace, name+" running", 4*time.Minute, func() bool {
				byMember = map[string]string{}
				for pod, p := range s.jobPods(t, namespace, name) {
					if p[1] == "Running" {
						byMember[p[0]] = pod
					}
				}
				return len(byMember) == 2
			})
			ended := time.Now().UTC().Truncate(time.Second)
			for _, member := range order {
				s.patchStatus(t, namespace, byMember[member], map[string]any{"containerStatuses": []map[string]any{{
					"name": "pytorch", "image": "ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126", "ready": false, "restartCount": 0,
					"state": map[string]any{"terminated": map[string]any{"exitCode": 1, "reason": "Error", "message": logs[member],
						"startedAt": ended.Add(-time.Minute).Format(time.RFC3339), "finishedAt": ended.Format(time.RFC3339)}},
				}}})
			}
			for _, member := range order {
				s.patchStatus(t, namespace, byMember[member], map[string]any{"phase": "Failed"})
			}
			const cause = "rank 2 (master-0, local rank 2) exited 3 (and 3 other processes)"
			got := follower.wait(t)
			require.Equal(t, 1, got.code, got.stderr)
			require.Regexp(t, `(?m)^AppWrapper `+name+`: Failed.*; `+regexp.QuoteMeta(cause)+`$`, got.stderr)

			s.waitFor(t, namespace, name+" failed, its pods gone", 4*time.Minute, func() bool {
				return s.appWrapperPhase(t, namespace, name) == "Failed" && len(s.jobPods(t, namespace, name)) == 0
			})
			r := s.generate(t, dir, "status", name, "-n", namespace)
			require.Zero(t, r.code, r.stderr)
			t.Logf("generator status %s:\n%s", name, r.stdout)
			require.Contains(t, r.stdout, "\n  cause:     attempt 1 of 1 failed: "+cause+"; 1 other pod failed after it: 1 lost peer; no retries left\n")
		})
	}
}
