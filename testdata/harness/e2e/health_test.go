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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/e2e"
	"github.com/torchwrap/generator/testdata/harness/gitops"
)

// healthOf is what the GitOps tools must say of a job in each state: Argo
// CD's health status (docs/gitops/argocd-cm.yaml) and Flux's status
// (docs/gitops/flux-kustomization.yaml).
var healthOf = map[cluster.State]struct{ argo, flux string }{
	cluster.Queued:    {"Progressing", "InProgress"},
	cluster.Running:   {"Progressing", "InProgress"},
	cluster.Suspended: {"Suspended", "Current"},
	cluster.Succeeded: {"Healthy", "Current"},
	cluster.Failed:    {"Degraded", "Failed"},
}

// The health checks of docs/gitops on live jobs: an AppWrapper, and a bare
// PyTorchJob, JobSet and TrainJob, each queued (Kueue holds it: its
// ClusterQueue, tiny-cq, has fewer GPUs than it asks for), running, stopped
// by generator stop, succeeded and failed. At each state, once generator
// status says it, the Lua Argo CD runs and the CEL Flux runs give the health
// of healthOf, and kstatus's verdict is logged; -record writes the objects
// to testdata/gitops/objects, which the gitops package's table test reads.
func (s *sim) health(t *testing.T) {
	const namespace = "sim-health"
	checks := gitops.Load(t)
	s.ensureQueue(t, namespace, "default-queue")
	kubectl(t, s.cluster, []byte(fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: health-tiny, namespace: %s}
spec: {clusterQueue: tiny-cq}
`, namespace)), "apply", "-f", "-")
	defer kubectl(t, s.cluster, nil, "delete", "appwrappers,pytorchjobs,jobsets,trainjobs", "--all", "-n", namespace, "--wait=true")
	// A TrainJob fails at once on a runtime whose Job does not retry its
	// pods (torch-distributed's retries them 6 times, minutes apart).
	runtime := jsonObject(t, []byte(kubectl(t, s.cluster, nil, "get", "clustertrainingruntime", "torch-distributed", "-o", "json")))
	runtime["metadata"] = map[string]any{"name": "torch-health"}
	for _, rj := range runtime["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["replicatedJobs"].([]any) {
		rj.(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["backoffLimit"] = 0
	}
	kubectl(t, s.cluster, mustJSON(t, runtime), "apply", "-f", "-")
	defer kubectl(t, s.cluster, nil, "delete", "clustertrainingruntime", "torch-health", "--wait=true")

	kinds := []struct {
		name, example string
		args          []string
	}{
		{"appwrapper", "helloworld", []string{"--set", "retryLimit=0", "--set", "failureGracePeriodDuration=1s", "--set", "terminalExitCodes={3}"}},
		{"pytorchjob", "helloworld", []string{"--set", "wrapper=none"}},
		{"jobset", "jobset", []string{"--set", "wrapper=none", "--set", "retryLimit=null", "--set", "terminalExitCodes=null"}},
		{"trainjob", "trainjob", []string{"--set", "volumes=null"}},
	}
	// Every job at once, then each state in turn.
	type job struct{ kind, state, name string }
	var jobs []job
	for _, k := range kinds {
		for _, state := range []string{"queued", "running", "succeeded", "failed"} {
			name := k.name + "-" + state
			args := append([]string{"--set", "jobName=" + name, "--set", "namespace=" + namespace, "--set", "numPods=2", "--set", "numGpusPerPod=1"}, k.args...)
			switch state {
			case "queued":
				args = append(args, "--set", "queueName=health-tiny", "--set", fmt.Sprintf("numGpusPerPod=%d", e2e.TinyQueueGPUs))
			case "running":
				args = append(args, runFor("10m")...)
			case "succeeded":
				args = append(args, runFor("1s")...)
			case "failed":
				args = append(append(args, runFor("100ms")...), exitCode(3)...)
				if k.name == "trainjob" {
					args = append(args, "--set", "trainingRuntime=torch-health")
				}
			}
			s.submit(t, s.render(t, cases.Example(t, k.example), args...))
			jobs = append(jobs, job{k.name, state, name})
		}
	}
	want := map[string]cluster.State{"queued": cluster.Queued, "running": cluster.Running, "stopped": cluster.Suspended,
		"succeeded": cluster.Succeeded, "failed": cluster.Failed}
	kindOf := map[string]string{"appwrapper": "AppWrapper", "pytorchjob": "PyTorchJob", "jobset": "JobSet", "trainjob": "TrainJob"}
	see := func(t *testing.T, j job) {
		state := want[j.state]
		var st cluster.Status
		s.waitFor(t, namespace, fmt.Sprintf("%s %s %s", kindOf[j.kind], j.name, state), 3*time.Minute, func() bool {
			r := s.generate(t, ".", "status", j.name, "-n", namespace, "--kubeconfig", "ADMIN", "-o", "json")
			require.Equal(t, 0, r.code, r.stderr)
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
			if st.State == cluster.Failed && state != cluster.Failed {
				t.Fatalf("%s failed: %s: %s", j.name, st.Reason, st.Message)
			}
			// Kueue has suspended a stopped job, not only deactivated its
			// Workload: the object says it.
			return st.State == state && (state != cluster.Suspended || suspended(t, s, namespace, kindOf[j.kind], j.name))
		})
		obj := &unstructured.Unstructured{}
		require.NoError(t, obj.UnmarshalJSON([]byte(kubectl(t, s.cluster, nil, "get", strings.ToLower(kindOf[j.kind]), j.name, "-n", namespace, "-o", "json"))))
		h, err := checks.Evaluate(obj)
		require.NoError(t, err)
		t.Logf("%s %s: generator status %s (%s: %s); %s", kindOf[j.kind], j.state, st.State, st.Reason, st.Message, h)
		require.Equal(t, healthOf[state].argo, h.Argo, "Argo CD's health of %s %s", j.kind, j.state)
		require.Equal(t, healthOf[state].flux, h.Flux, "Flux's health of %s %s", j.kind, j.state)
		if state == cluster.Failed && st.Reason != "" {
			require.Contains(t, h.ArgoMessage, st.Reason, "Argo CD's message names the cause generator status gives")
		}
		if *gitops.Record {
			data, err := sigsyaml.Marshal(gitops.Strip(obj).Object)
			require.NoError(t, err)
			path := filepath.Join(gitops.ObjectsDir(t), j.kind+"-"+j.state+".yaml")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, data, 0o644))
		}
	}
	for _, j := range jobs {
		t.Run(j.kind+"/"+j.state, func(t *testing.T) { see(t, j) })
	}
	for _, k := range kinds {
		t.Run(k.name+"/stopped", func(t *testing.T) {
			name := k.name + "-running"
			r := s.generate(t, ".", "stop", name, "-n", namespace, "--kubeconfig", "ADMIN")
			require.Equal(t, 0, r.code, r.stderr)
			see(t, job{k.name, "stopped", name})
		})
	}
}

// suspended tells whether a job's own field holds it.
func suspended(t *testing.T, s *sim, namespace, kind, name string) bool {
	path := "{.spec.suspend}"
	if kind == "PyTorchJob" {
		path = "{.spec.runPolicy.suspend}"
	}
	return kubectl(t, s.cluster, nil, "get", strings.ToLower(kind), name, "-n", namespace, "-o", "jsonpath="+path) == "true"
}
