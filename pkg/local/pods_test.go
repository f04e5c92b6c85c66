package local_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/local"
	"github.com/torchwrap/generator/testdata/cases"
)

// goldenPods are the pods of a golden case's expected job.
func goldenPods(t *testing.T, name string) []local.Pod {
	t.Helper()
	manifest, err := os.ReadFile(cases.Path(t, "testdata", "golden", name, "expected.yaml"))
	require.NoError(t, err)
	job, err := cluster.NewJob(manifest, "ml")
	require.NoError(t, err)
	pods, err := local.Pods(job)
	require.NoError(t, err)
	return pods
}

// envOf is the environment of a pod's first container as the kubelet
// gives it.
func envOf(t *testing.T, pod local.Pod) map[string]string {
	t.Helper()
	env, err := local.ContainerEnv(context.Background(), nil, pod.Pod, &pod.Pod.Spec.Containers[0], nil)
	require.NoError(t, err)
	return env
}

// members are the pods' labels and node ranks, in order.
func members(pods []local.Pod) map[string]int {
	m := map[string]int{}
	for _, p := range pods {
		m[p.Label()] = p.Member.Rank
	}
	return m
}

// The training operator's pods: the master is rank 0 and MASTER_ADDR for
// all, each pod reached by its Service's name; the variables of setPodEnv.
func TestPyTorchJobPods(t *testing.T) {
	pods := goldenPods(t, "helloworld-4x8")
	require.Equal(t, map[string]int{"master-0": 0, "worker-0": 1, "worker-1": 2, "worker-2": 3}, members(pods))
	require.Equal(t, "my-job-worker-1", pods[2].Pod.Name)
	require.Contains(t, pods[2].Names, "my-job-worker-1.ml.svc")
	require.Equal(t, "worker", pods[2].Pod.Labels["training.kubeflow.org/replica-type"])
	env := envOf(t, pods[2])
	for name, want := range map[string]string{"MASTER_ADDR": "my-job-master-0", "PET_MASTER_ADDR": "my-job-master-0", "MASTER_PORT": "23456",
		"PET_MASTER_PORT": "23456", "WORLD_SIZE": "4", "RANK": "2", "PET_NODE_RANK": "2", "PET_NNODES": "4", "PYTHONUNBUFFERED": "1"} {
		require.Equal(t, want, env[name], name)
	}
	require.Equal(t, "auto", env["PET_NPROC_PER_NODE"], "the operator's default nprocPerNode")
}

// An elasticPolicy: the rendezvous endpoint, backend and min:max pods.
func TestElasticPyTorchJobPods(t *testing.T) {
	pods := goldenPods(t, "elastic-pytorchjob")
	require.Len(t, pods, 4)
	env := envOf(t, pods[1])
	require.Equal(t, "2:8", env["PET_NNODES"])
	require.Equal(t, "c10d", env["PET_RDZV_BACKEND"])
	require.Regexp(t, `^elastic-ptj-(master|worker)-0:23456$`, env["PET_RDZV_ENDPOINT"])
	require.Equal(t, "5", env["PET_MAX_RESTARTS"])
}

// A JobSet's pods: host names in the JobSet's subdomain, the completion
// index as JOB_COMPLETION_INDEX, and as RANK by the chart's fieldRef.
func TestJobSetPods(t *testing.T) {
	pods := goldenPods(t, "jobset-basic")
	require.Equal(t, map[string]int{"node-0": 0, "node-1": 1, "node-2": 2, "node-3": 3}, members(pods))
	p := pods[3].Pod
	require.Equal(t, "js-basic-node-0-3", p.Spec.Hostname)
	require.Equal(t, "js-basic", p.Spec.Subdomain)
	require.Contains(t, pods[3].Names, "js-basic-node-0-3.js-basic")
	env := envOf(t, pods[3])
	require.Equal(t, "3", env["JOB_COMPLETION_INDEX"])
	require.Equal(t, "3", env["RANK"])
	require.Equal(t, "js-basic-node-0-0.js-basic", env["MASTER_ADDR"])
	require.Equal(t, "3", env["EPOCHS"])
}

// A TrainJob's pods on torch-distributed: the trainer's command in the
// container node, the torch plugin's PET_ variables.
func TestTrainJobPods(t *testing.T) {
	pods := goldenPods(t, "trainjob-basic")
	require.Equal(t, map[string]int{"node-0": 0, "node-1": 1, "node-2": 2, "node-3": 3}, members(pods))
	c := pods[2].Pod.Spec.Containers[0]
	require.Equal(t, "node", c.Name)
	require.Equal(t, "ghcr.io/example/train:1.0", c.Image)
	require.Equal(t, []string{"sh", "-c"}, c.Command[:2])
	env := envOf(t, pods[2])
	for name, want := range map[string]string{"PET_NNODES": "4", "PET_NPROC_PER_NODE": "8", "PET_NODE_RANK": "2",
		"PET_MASTER_ADDR": "tj-basic-node-0-0.tj-basic", "PET_MASTER_PORT": "29500", "EPOCHS": "3"} {
		require.Equal(t, want, env[name], name)
	}
}

// T9k's pods, as its documents say: the first replica's pod is the
// master; in torchrun mode the controller's torchrun line comes before
// the container's arguments.
func TestT9kPods(t *testing.T) {
	pods := goldenPods(t, "ptj-script-mode")
	require.Equal(t, map[string]int{"master-0": 0, "worker-0": 1}, members(pods))
	env := envOf(t, pods[1])
	require.Equal(t, map[string]string{"MASTER_ADDR": "ptj-script-master-0", "MASTER_PORT": "23456", "RANK": "1", "WORLD_SIZE": "2"},
		map[string]string{"MASTER_ADDR": env["MASTER_ADDR"], "MASTER_PORT": env["MASTER_PORT"], "RANK": env["RANK"], "WORLD_SIZE": env["WORLD_SIZE"]})

	pods = goldenPods(t, "ptj-torchrun")
	c := pods[0].Pod.Spec.Containers[0]
	require.Equal(t, []string{"torchrun"}, c.Command)
	require.Equal(t, []string{"--nnodes=4", "--rdzv_backend=c10d", "--rdzv_endpoint=$(MASTER_ADDR):$(MASTER_PORT)", "--nproc_per_node=8",
		"--max_restarts=3", "--monitor-interval=5", "train.py", "--config", "configs/my model.yaml", "--lr", "0.1"}, c.Args)
}

// A DeepSpeedJob does not run here, and says why.
func TestDeepSpeedJobRefused(t *testing.T) {
	manifest, err := os.ReadFile(cases.Path(t, "testdata", "golden", "dsj-basic", "expected.yaml"))
	require.NoError(t, err)
	job, err := cluster.NewJob(manifest, "ml")
	require.NoError(t, err)
	_, err = local.Pods(job)
	require.ErrorContains(t, err, "a DeepSpeedJob does not run here: its launcher in worker 0 reaches the other workers over ssh")
}

// The operator's defaults of an elasticPolicy: a bound not given is the
// other, and with neither both are the workers' replicas; nprocPerNode is
// auto unless the policy gives nProcPerNode.
func TestElasticDefaults(t *testing.T) {
	for policy, want := range map[string][2]string{
		"{}":                                {"3:3", "auto"},
		"{maxReplicas: 5}":                  {"5:5", "auto"},
		"{minReplicas: 2}":                  {"2:2", "auto"},
		"{minReplicas: 1, nProcPerNode: 4}": {"1:1", "4"},
	} {
		job, err := cluster.NewJob([]byte(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: job}
spec:
  elasticPolicy: `+policy+`
  pytorchReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: pytorch, command: ["true"]}]}}
    Worker:
      replicas: 3
      template: {spec: {containers: [{name: pytorch, command: ["true"]}]}}
`), "ml")
		require.NoError(t, err)
		pods, err := local.Pods(job)
		require.NoError(t, err)
		env := envOf(t, pods[1])
		require.Equal(t, want[0], env["PET_NNODES"], policy)
		require.Equal(t, want[1], env["PET_NPROC_PER_NODE"], policy)
	}
}
