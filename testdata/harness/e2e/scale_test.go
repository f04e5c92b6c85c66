//go:build e2e && linux

package e2e_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/testdata/harness/e2e"
)

// scale runs status, list, logs and delete on a job of 8 pods and on one of
// 64, on kwok's nodes in e2e.SimScaleNamespace, whose pods serve a log of
// e2e.TrainingLogLines lines, and counts what each command asks of the API
// server (its API log, cluster.APILogVariable): the requests must not grow
// with the pods, but for the logs the user asked for, one a pod, each read
// whole. Watches are counted apart, at most 3 a command: delete watches
// what is left once it has listed it (the pods may be gone already), and
// the API server ends a watch when it likes. The time is not asserted
// (make bench-scale measures it).
func (s *sim) scale(t *testing.T) {
	ns := e2e.SimScaleNamespace
	s.ensureQueue(t, ns, "default-queue")
	dir := t.TempDir()
	asked := map[int]map[string]map[string]int{}
	for _, pods := range []int{8, 64} {
		name := fmt.Sprintf("scale-%d", pods)
		file := filepath.Join(dir, name+".settings.yaml")
		require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`jobName: %s
namespace: %s
queueName: default-queue
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
numPods: %d
numCpusPerPod: 100m
numGpusPerPod: 0
totalMemoryPerPod: 128Mi
setupCommands:
- cd /tmp
mainProgram: train.py
podAnnotations:
  sim.torchwrap.dev/run-for: 1h
`, name, ns, pods)), 0o644))
		require.Zero(t, s.generate(t, dir, "submit", "-f", file).code)
		s.waitFor(t, ns, name+" running", 3*time.Minute, func() bool { return s.appWrapperPhase(t, ns, name) == "Running" && s.runningPods(t, name) == pods })
		asked[pods] = map[string]map[string]int{}
		for _, c := range []struct {
			command string
			args    []string
		}{
			{"status", []string{"status", name, "-n", ns}},
			{"status -o json", []string{"status", name, "-n", ns, "-o", "json"}},
			{"list", []string{"list", "-n", ns}},
			{"logs", []string{"logs", name, "-n", ns}},
			{"logs --tail 1", []string{"logs", name, "-n", ns, "--tail", "1", "--timestamps"}},
			{"delete", []string{"delete", name, "-n", ns}},
		} {
			command := c.command
			r, requests := s.counted(t, dir, c.args...)
			require.Zero(t, r.code, "generator %s:\n%s", strings.Join(c.args, " "), r.stderr)
			logs, watches := 0, 0
			asked[pods][command] = map[string]int{}
			for _, req := range requests {
				path, query, _ := strings.Cut(req.URL, "?")
				switch {
				case strings.HasSuffix(path, "/log"):
					logs++
				case strings.Contains(query, "watch=true"):
					watches++
				default:
					asked[pods][command][req.Method+" "+strings.ReplaceAll(path, name, "NAME")]++
				}
			}
			require.LessOrEqual(t, watches, 3, "the watches of %s", command)
			switch command {
			case "logs":
				// Every line of every pod, each pod's log asked once.
				require.Equal(t, pods, logs, "logs of %s", name)
				require.Equal(t, pods*e2e.TrainingLogLines, strings.Count(r.stdout, "\n"), "lines of the logs of %s", name)
			case "logs --tail 1":
				// Each pod's last line, with when it was written.
				require.Equal(t, pods, logs, "logs of %s", name)
				require.Equal(t, pods, strings.Count(r.stdout, "Z [rank0] step "), "last lines of the logs of %s:\n%s", name, r.stdout)
			case "status", "status -o json":
				// The setup commands, and the last line, read from the
				// pod of rank 0 alone. kwok's log was written a day
				// before: the job may be stuck.
				require.Equal(t, 2, logs, "%s reads two logs", command)
				require.Contains(t, r.stdout, map[string]string{"status": "\n  output:    master-0 has written nothing for ",
					"status -o json": "\"output\": {\n    \"member\": \"master-0\",\n    \"at\": \"2026-11-27T09:04:33."}[command])
			default:
				require.Zero(t, logs, "%s reads no log", command)
			}
			t.Logf("%s of %d pods: %d requests (and %d for logs)", command, pods, len(requests)-logs, logs)
		}
	}
	require.Equal(t, asked[8], asked[64], "the requests of each command, but for the logs, with 8 pods and with 64")
	// The cluster has run for minutes (the other scenarios in turn ran
	// before): its nodes renewed their leases all along, none was taken
	// for lost, and no pod marked not ready for it.
	notReady := kubectl(t, s.cluster, nil, "get", "events", "-A", "--field-selector", "reason=NodeNotReady",
		"-o", "custom-columns=KIND:.involvedObject.kind,NAME:.involvedObject.name,COUNT:.count,FIRST:.firstTimestamp", "--no-headers")
	require.Empty(t, strings.TrimSpace(notReady), "NodeNotReady events")
}

// counted runs the generator as generate does, with its API log, and gives
// the requests it made.
func (s *sim) counted(t *testing.T, dir string, args ...string) (result, []cluster.APIRequest) {
	t.Helper()
	return s.countedWith(t, nil, dir, args...)
}

// readAPILog reads the requests of an API log (cluster.APILogVariable):
// none when a command made none, and so wrote no log.
func readAPILog(t *testing.T, path string) []cluster.APIRequest {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var requests []cluster.APIRequest
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var req cluster.APIRequest
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &req))
		requests = append(requests, req)
	}
	require.NoError(t, scanner.Err())
	return requests
}

// runningPods counts the running pods of a PyTorchJob.
func (s *sim) runningPods(t *testing.T, job string) int {
	out := kubectl(t, s.cluster, nil, "get", "pods", "-n", e2e.SimScaleNamespace, "-l", "training.kubeflow.org/job-name="+job,
		"--field-selector", "status.phase=Running", "-o", "name")
	return len(strings.Fields(out))
}
