//go:build e2e && linux

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/testdata/harness/e2e"
)

// followers counts what a follower asks of the API server (its API log,
// cluster.APILogVariable) while the job it follows does not change:
// submit --wait of a job of 2 pods that runs 2 minutes, and logs -f of it
// for a minute while it runs. Each watches the job, its Workload, its pods
// and their events, and is told what changes: at most 20 requests after
// the submit; for logs -f, once it has found the job (a GET of each kind
// of that name), at most 10 but for the logs, one a pod and the start of
// the log of the pod of rank 0 (its setup commands); and none at all in
// the quiet middle but for a watch the API server ended, so that the
// counts do not grow with the time followed. The pods are kwok's, in
// e2e.SimScaleNamespace, where kwok serves their logs.
func (s *sim) followers(t *testing.T) {
	const name, pods = "quiet", 2
	ns := e2e.SimScaleNamespace
	s.ensureQueue(t, ns, "default-queue")
	dir := t.TempDir()
	file := filepath.Join(dir, name+".settings.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`jobName: %s
namespace: %s
queueName: default-queue
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
numPods: %d
numCpusPerPod: 100m
numGpusPerPod: 0
totalMemoryPerPod: 128Mi
mainProgram: train.py
nodeSelector:
  %s: %s
podAnnotations:
  sim.torchwrap.dev/run-for: 120s
`, name, ns, pods, e2e.RackLabel, e2e.SideRack)), 0o644))
	submitLog, logsLog := filepath.Join(dir, "submit.jsonl"), filepath.Join(dir, "logs.jsonl")
	submit := s.backgroundWith(t, []string{cluster.APILogVariable + "=" + submitLog}, "submit", "--wait", "-f", file)
	s.waitFor(t, ns, name+" running", 3*time.Minute, func() bool {
		// The AppWrapper may not be there yet: submit is still creating it.
		phase, _ := s.cluster.Kubectl(nil, "get", "appwrapper", name, "-n", ns, "-o", "jsonpath={.status.phase}")
		return phase == "Running"
	})
	logs := s.backgroundWith(t, []string{cluster.APILogVariable + "=" + logsLog}, "logs", "-f", name, "-n", ns)
	time.Sleep(time.Minute)
	require.NoError(t, logs.cmd.Process.Signal(os.Interrupt))
	logs.wait(t)
	require.Equal(t, pods*e2e.TrainingLogLines, strings.Count(logs.result.stdout, "\n"), "the lines of the logs of %s", name)
	got := submit.wait(t)
	require.Equal(t, 0, got.code, got.stderr)
	require.Contains(t, got.stdout, "Succeeded")

	// submit --wait: what it asked after its server-side apply of the job.
	requests := readAPILog(t, submitLog)
	applied := -1
	for i, req := range requests {
		if req.Method == "PATCH" && strings.Contains(req.URL, "/appwrappers/"+name) {
			applied = i
		}
	}
	require.GreaterOrEqual(t, applied, 0, "the submit's apply")
	following := requests[applied+1:]
	t.Logf("submit --wait: %d requests after the submit:\n%s", len(following), requestLines(following))
	require.LessOrEqual(t, len(following), 20, "the requests of submit --wait after its submit")
	quietly(t, "submit --wait", following)

	// logs -f: one log a pod, and a few requests more.
	requests = readAPILog(t, logsLog)
	var others []cluster.APIRequest
	finding, logReads := 0, 0
	for _, req := range requests {
		switch path, _, _ := strings.Cut(req.URL, "?"); {
		case strings.HasSuffix(path, "/"+name):
			finding++
		case strings.HasSuffix(path, "/log"):
			logReads++
		default:
			others = append(others, req)
		}
	}
	t.Logf("logs -f: %d requests to find the job, %d after, and %d logs:\n%s", finding, len(others), logReads, requestLines(requests))
	require.Equal(t, pods+1, logReads, "the logs read by logs -f")
	require.LessOrEqual(t, len(others), 10, "the requests of logs -f but its logs, once it found the job")
	quietly(t, "logs -f", requests)
}

// quietly checks that a follower asked (almost) nothing in the middle of
// what it followed, from 20 s after its first request to 20 s before its
// watches ended: a watch the API server ended and it opened again, at
// most.
func quietly(t *testing.T, follower string, requests []cluster.APIRequest) {
	t.Helper()
	first, last := requests[0].Started, requests[0].Started
	for _, req := range requests {
		if end := req.Started.Add(time.Duration(req.Seconds * float64(time.Second))); end.After(last) {
			last = end
		}
	}
	require.Greater(t, last.Sub(first), 50*time.Second, "%s followed for a while", follower)
	var middle []cluster.APIRequest
	for _, req := range requests {
		if req.Started.After(first.Add(20*time.Second)) && req.Started.Before(last.Add(-20*time.Second)) {
			middle = append(middle, req)
		}
	}
	require.LessOrEqual(t, len(middle), 2, "%s asked in the quiet middle of the job:\n%s", follower, requestLines(middle))
}

// requestLines writes requests one a line, for a test's log.
func requestLines(requests []cluster.APIRequest) string {
	var b strings.Builder
	for _, req := range requests {
		fmt.Fprintf(&b, "  %s %s %s %d (%.1f s)\n", req.Started.Format("15:04:05.000"), req.Method, req.URL, req.Status, req.Seconds)
	}
	return b.String()
}
