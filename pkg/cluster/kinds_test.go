package cluster

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// asPod reads a pod written in YAML.
func asPod(t *testing.T, manifest string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(object(t, manifest).Object, &p))
	return &p
}

// jobSetOf is a JobSet of two replicated jobs: launcher (one Job of one
// pod) and node (replicas Jobs of 4 pods each).
func jobSetOf(replicas int) string {
	return fmt.Sprintf(`
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: demo, namespace: ml}
spec:
  replicatedJobs:
  - {name: launcher, replicas: 1, template: {spec: {parallelism: 1, completions: 1, template: {spec: {containers: [{name: pytorch}]}}}}}
  - {name: node, replicas: %d, template: {spec: {parallelism: 4, completions: 4, template: {spec: {containers: [{name: pytorch}]}}}}}`, replicas)
}

const pyTorchTrainingJob = `
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata: {name: demo, namespace: ml, uid: t9k-uid}
spec:
  replicaSpecs:
  - {type: master, replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
  - {type: worker, replicas: 3, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}`

// Each kind's pods are told apart by its own labels (T9k's by their names),
// as role-index, with the torchrun node rank they have.
func TestMembers(t *testing.T) {
	ptjLabels := func(role, index string) string {
		return fmt.Sprintf("{training.kubeflow.org/job-name: demo, training.kubeflow.org/replica-type: %s, training.kubeflow.org/replica-index: '%s'}", role, index)
	}
	jobSetLabels := func(rjob, job, completion string) string {
		return fmt.Sprintf("{jobset.sigs.k8s.io/jobset-name: demo, jobset.sigs.k8s.io/replicatedjob-name: %s, jobset.sigs.k8s.io/job-index: '%s', batch.kubernetes.io/job-completion-index: '%s'}", rjob, job, completion)
	}
	for _, tc := range []struct {
		name, job, pod string
		want           string // role-index, then the rank
		rank           int
		unknown        bool
	}{
		{name: "PyTorchJob master", job: pyTorchJob("{}"), pod: pod("demo-master-0", ptjLabels("master", "0"), "{}"), want: "master-0", rank: 0},
		{name: "PyTorchJob worker: rank after the master", job: pyTorchJob("{}"), pod: pod("demo-worker-1", ptjLabels("worker", "1"), "{}"), want: "worker-1", rank: 2},
		{name: "PyTorchJob, the operator's Master spelt as the type", job: pyTorchJob("{}"), pod: pod("demo-master-0", ptjLabels("Master", "0"), "{}"), want: "master-0", rank: 0},
		{name: "PyTorchJob in an AppWrapper: the wrapped job's labels", job: appWrapper("{}"), pod: pod("demo-worker-0", ptjLabels("worker", "0"), "{}"), want: "worker-0", rank: 1},
		{name: "JobSet in an AppWrapper", job: appWrapperOf(wrappedJobSet, "{}"), pod: pod("demo-node-0-1", jobSetLabels("node", "0", "1"), "{}"), want: "node-1", rank: 1},
		{name: "JobSet, after the pods of the replicated job before", job: jobSetOf(1), pod: pod("demo-node-0-2", jobSetLabels("node", "0", "2"), "{}"), want: "node-2", rank: 3},
		{name: "JobSet of several Jobs: the Job's index in the role", job: jobSetOf(2), pod: pod("demo-node-1-2", jobSetLabels("node", "1", "2"), "{}"), want: "node-1-2", rank: 7},
		{name: "JobSet, the completion index as an annotation alone", job: jobSetOf(1),
			pod: `{apiVersion: v1, kind: Pod, metadata: {name: demo-launcher-0-0, annotations: {batch.kubernetes.io/job-completion-index: '0'},
  labels: {jobset.sigs.k8s.io/replicatedjob-name: launcher, jobset.sigs.k8s.io/job-index: '0'}}}`, want: "launcher-0", rank: 0},
		{name: "TrainJob: its JobSet's pods", job: trainJob(false, "{}"), pod: pod("demo-node-0-2", jobSetLabels("node", "0", "2"), "{}"), want: "node-2", rank: 2},
		{name: "PyTorchTrainingJob master, by its name", job: pyTorchTrainingJob, pod: pod("demo-master-0", "{}", "{}"), want: "master-0", rank: 0},
		{name: "PyTorchTrainingJob worker, by its name", job: pyTorchTrainingJob, pod: pod("demo-worker-2", "{}", "{}"), want: "worker-2", rank: 3},
		{name: "DeepSpeedJob worker", job: `{apiVersion: batch.tensorstack.dev/v1beta1, kind: DeepSpeedJob, metadata: {name: demo}, spec: {worker: {replicas: 4}}}`,
			pod: pod("demo-worker-3", "{}", "{}"), want: "worker-3", rank: 3},
		{name: "a pod without the labels", job: pyTorchJob("{}"), pod: pod("demo-sidecar", "{training.kubeflow.org/job-name: demo}", "{}"), unknown: true},
		{name: "a T9k pod named otherwise", job: pyTorchTrainingJob, pod: pod("other-worker-x", "{}", "{}"), unknown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := object(t, tc.job)
			m, ok := kindOf(job).member(job.Object, asPod(t, tc.pod))
			require.Equal(t, !tc.unknown, ok)
			if ok {
				require.Equal(t, tc.want, m.String())
				require.Equal(t, tc.rank, m.Rank)
			}
		})
	}
}

// A pod's log is its training container's, as the chart names it for the
// job's kind; else kubectl's default container; else the first.
func TestTrainingContainer(t *testing.T) {
	for _, tc := range []struct{ job, pod, want string }{
		{appWrapper("{}"), `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {initContainers: [{name: setup}], containers: [{name: sidecar}, {name: pytorch}]}}`, "pytorch"},
		{trainJob(false, "{}"), `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: sidecar}, {name: node}]}}`, "node"},
		{`{apiVersion: batch.tensorstack.dev/v1beta1, kind: DeepSpeedJob, metadata: {name: demo}}`, `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: worker}]}}`, "worker"},
		{pyTorchJob("{}"), `{apiVersion: v1, kind: Pod, metadata: {name: p, annotations: {kubectl.kubernetes.io/default-container: main}}, spec: {containers: [{name: sidecar}, {name: main}]}}`, "main"},
		{pyTorchJob("{}"), `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: first}, {name: second}]}}`, "first"},
	} {
		job := object(t, tc.job)
		require.Equal(t, tc.want, kindOf(job).trainingContainer(job.Object, asPod(t, tc.pod)), tc.pod)
	}
}

// Every kind's pod count and GPUs, T9k's counted from their replica specs.
func TestExpectedPodsAndGPUs(t *testing.T) {
	for _, tc := range []struct {
		job        string
		pods, gpus int64
	}{
		{appWrapper("{}"), 2, 0},
		{pyTorchJob("{}"), 3, 0},
		{jobSetOf(2), 9, 0},
		{trainJob(false, "{}"), 3, 24},
		{pyTorchTrainingJob, 4, 0},
	} {
		s, err := picture(object(t, tc.job), nil, nil)
		require.NoError(t, err)
		require.Equal(t, tc.pods, s.Pods.Expected, tc.job)
		require.Equal(t, tc.gpus, s.GPUs, tc.job)
	}
}
