package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// appWrapper is an AppWrapper of two pods (a PyTorchJob's Master and
// Worker) in the LocalQueue team-a, with the given status.
func appWrapper(status string) string {
	return appWrapperOf(wrappedPyTorchJob, status)
}

// appWrapperOf is the AppWrapper demo of one component, with the given
// status.
func appWrapperOf(component, status string) string {
	return `
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata:
  name: demo
  namespace: ml
  uid: aw-uid
  labels: {kueue.x-k8s.io/queue-name: team-a}
  finalizers: [workload.codeflare.dev/finalizer]
spec:
  components:
  - template:
` + component + `
status: ` + status
}

// The components of an AppWrapper: a PyTorchJob of two pods, a JobSet of
// two pods.
const (
	wrappedPyTorchJob = `      apiVersion: kubeflow.org/v1
      kind: PyTorchJob
      metadata: {name: demo}
      spec:
        pytorchReplicaSpecs:
          Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
          Worker: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}`
	wrappedJobSet = `      apiVersion: jobset.x-k8s.io/v1alpha2
      kind: JobSet
      metadata: {name: demo}
      spec:
        replicatedJobs:
        - name: node
          replicas: 1
          template: {spec: {parallelism: 2, completions: 2, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}}`
)

// workloadOwnedBy is the Kueue Workload of the AppWrapper demo, with the
// given status, labelled with its job's uid as Kueue labels it.
func workloadOwnedBy(uid, status string) string {
	return fmt.Sprintf(`
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: appwrapper-demo-7d9f2
  namespace: ml
  labels: {kueue.x-k8s.io/job-uid: %[1]s}
  ownerReferences: [{apiVersion: workload.codeflare.dev/v1beta2, kind: AppWrapper, name: demo, uid: %[1]s}]
spec: {queueName: team-a}
status: %[2]s`, uid, status)
}

// pod is a pod of the job demo, with the given labels and status.
func pod(name, labels, status string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: ml, labels: %s}
spec: {containers: [{name: pytorch, image: busybox}]}
status: %s`, name, labels, status)
}

const (
	awPods    = "{workload.codeflare.dev/appwrapper: demo}"
	readyPod  = "{phase: Running, conditions: [{type: Ready, status: 'True'}]}"
	pendingWL = `{conditions: [{type: QuotaReserved, status: 'False', reason: Pending,
  message: "couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed"}]}`
	admittedWL = `{admission: {clusterQueue: team-a-cq}, conditions: [{type: QuotaReserved, status: 'True', reason: QuotaReserved},
  {type: Admitted, status: 'True', reason: Admitted}]}`
)

// pendingWorkloads answers Kueue's visibility API for LocalQueue team-a: the
// Workload is second in line.
func pendingWorkloads(dyn *dynamicfake.FakeDynamicClient) {
	dyn.PrependReactor("get", "localqueues", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "pendingworkloads" || action.GetResource().Group != "visibility.kueue.x-k8s.io" {
			return false, nil, nil
		}
		return true, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "visibility.kueue.x-k8s.io/v1beta1", "kind": "PendingWorkloadsSummary",
			"items": []any{
				map[string]any{"metadata": map[string]any{"name": "appwrapper-other-1a2b3"}, "positionInLocalQueue": int64(0)},
				map[string]any{"metadata": map[string]any{"name": "appwrapper-demo-7d9f2"}, "positionInLocalQueue": int64(1)},
			},
		}}, nil
	})
}

// cluster is a fake cluster with the objects, each a YAML document, and
// the reactors of react.
func cluster(t *testing.T, react func(*dynamicfake.FakeDynamicClient), objects ...string) *Client {
	return fake(t, clustertest.Fake{Objects: strings.Join(objects, "\n---\n"), React: react})
}

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ref       Ref
		objects   []string
		react     func(*dynamicfake.FakeDynamicClient)
		want      string
		wantState State
		check     func(*testing.T, Status)
	}{{
		name:      "queued, with its position in the LocalQueue",
		objects:   []string{appWrapper("{phase: Suspended}"), workloadOwnedBy("aw-uid", pendingWL)},
		react:     pendingWorkloads,
		wantState: Queued,
		want:      "AppWrapper demo: Queued in LocalQueue team-a (position 2): Pending: couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed",
	}, {
		name:      "queued, without the visibility API",
		objects:   []string{appWrapper("{phase: Suspended}"), workloadOwnedBy("aw-uid", pendingWL)},
		wantState: Queued,
		want:      "AppWrapper demo: Queued in LocalQueue team-a: Pending: couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed",
	}, {
		name:      "queued before Kueue made its Workload",
		objects:   []string{appWrapper("{}")},
		wantState: Queued,
		want:      "AppWrapper demo: Queued in LocalQueue team-a: Kueue has not made a Workload for it yet",
	}, {
		name: "the Workload of another job is not this one's",
		objects: []string{appWrapper("{phase: Suspended}"),
			workloadOwnedBy("other-uid", admittedWL)},
		wantState: Queued,
		want:      "AppWrapper demo: Queued in LocalQueue team-a: Kueue has not made a Workload for it yet",
	}, {
		name: "preempted",
		objects: []string{appWrapper("{phase: Suspending}"), workloadOwnedBy("aw-uid", `{conditions: [
  {type: QuotaReserved, status: 'False', reason: Pending, message: "waiting"},
  {type: Evicted, status: 'True', reason: Preempted, message: "Preempted to accommodate a workload (UID: 1234) due to prioritization in the ClusterQueue"}]}`)},
		wantState: Queued,
		want:      "AppWrapper demo: Queued in LocalQueue team-a (Suspending): Preempted: Preempted to accommodate a workload (UID: 1234) due to prioritization in the ClusterQueue",
	}, {
		// Kueue names the preemptor by its uid: status names its job, its
		// Workload and its priority.
		name: "preempted by a workload it can read",
		objects: []string{appWrapper("{phase: Suspended}"), workloadOwnedBy("aw-uid", `{conditions: [
  {type: QuotaReserved, status: 'False', reason: Pending, message: "waiting"},
  {type: Evicted, status: 'True', reason: Preempted, message: "Preempted to accommodate a workload (UID: 1234, JobUID: big-uid) due to reclamation within the cohort; preemptor path: /teams/team-b-cq; preemptee path: /teams/team-a-cq"}]}`),
			strings.NewReplacer("name: appwrapper-demo-7d9f2", "name: appwrapper-big-5b1c0\n  uid: '1234'", "name: demo, uid: big-uid", "name: big, uid: big-uid",
				"spec: {queueName: team-a}", "spec: {queueName: team-b, priority: 100, priorityClassName: high-priority}").Replace(workloadOwnedBy("big-uid", admittedWL))},
		wantState: Queued,
		want: "AppWrapper demo: Queued in LocalQueue team-a: Preempted: preempted by AppWrapper ml/big (Workload ml/appwrapper-big-5b1c0, priority high-priority = 100) " +
			"due to reclamation within the cohort; preemptor path: /teams/team-b-cq; preemptee path: /teams/team-a-cq",
	}, {
		// Resumed (generator resume), it waits for quota: Kueue leaves its
		// Workload Evicted for the deactivation, which holds it no more.
		name: "resumed, waiting for quota",
		objects: []string{appWrapper("{phase: Suspended}"), workloadOwnedBy("aw-uid", `{conditions: [
  {type: Evicted, status: 'True', reason: Deactivated, message: "The workload is deactivated"},
  {type: Requeued, status: 'True', reason: Reactivated, message: "The workload was reactivated"},
  {type: QuotaReserved, status: 'False', reason: Pending, message: "couldn't assign flavors to pod set 0-0: insufficient unused quota for nvidia.com/gpu in flavor gpu-flavor, 4 more needed"}]}`)},
		wantState: Queued,
		want:      "AppWrapper demo: Queued in LocalQueue team-a: Pending: couldn't assign flavors to pod set 0-0: insufficient unused quota for nvidia.com/gpu in flavor gpu-flavor, 4 more needed",
	}, {
		name: "admitted, its pods starting, one image not found",
		objects: []string{appWrapper("{phase: Running, conditions: [{type: PodsReady, status: 'False', reason: InsufficientPodsReady}]}"),
			workloadOwnedBy("aw-uid", admittedWL),
			pod("demo-master-0", awPods, readyPod),
			pod("demo-worker-0", awPods, `{phase: Pending, containerStatuses: [{name: pytorch, state: {waiting: {reason: ImagePullBackOff,
  message: 'Back-off pulling image "registry.example/train:v9"'}}}]}`)},
		wantState: Admitted,
		want:      `AppWrapper demo: Admitted, pods ready 1/2; pod demo-worker-0, container pytorch: ImagePullBackOff: Back-off pulling image "registry.example/train:v9"`,
	}, {
		name: "admitted by Kueue, not yet started by the AppWrapper controller",
		objects: []string{appWrapper("{phase: Suspended}"),
			workloadOwnedBy("aw-uid", admittedWL)},
		wantState: Admitted,
		want:      "AppWrapper demo: Admitted, pods ready 0/2",
	}, {
		name: "admitted, a pod that no node can take",
		objects: []string{appWrapper("{phase: Running}"),
			workloadOwnedBy("aw-uid", admittedWL),
			pod("demo-master-0", awPods, `{phase: Pending, conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable,
  message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}]}`)},
		wantState: Admitted,
		want:      "AppWrapper demo: Admitted, pods ready 0/2; pod demo-master-0 cannot be scheduled: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
	}, {
		name: "running, every pod ready before the AppWrapper controller says so",
		objects: []string{appWrapper("{phase: Running}"),
			workloadOwnedBy("aw-uid", admittedWL),
			pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod)},
		wantState: Running,
		want:      "AppWrapper demo: Running, pods ready 2/2",
	}, {
		name: "running, a pod done before the AppWrapper controller says the job is",
		objects: []string{appWrapper("{phase: Running}"),
			workloadOwnedBy("aw-uid", admittedWL),
			pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, "{phase: Succeeded}")},
		wantState: Running,
		want:      "AppWrapper demo: Running, pods ready 1/2 (1 succeeded)",
	}, {
		name: "running",
		objects: []string{appWrapper("{phase: Running, conditions: [{type: PodsReady, status: 'True', reason: SufficientPodsReady}]}"),
			workloadOwnedBy("aw-uid", admittedWL),
			pod("demo-master-0", awPods, readyPod), pod("demo-worker-0", awPods, readyPod),
			pod("someone-else-0", "{workload.codeflare.dev/appwrapper: other}", readyPod)},
		wantState: Running,
		want:      "AppWrapper demo: Running, pods ready 2/2",
	}, {
		name: "resetting after a failed pod",
		objects: []string{appWrapper(`{phase: Resetting, resettingCount: 1, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}`),
			workloadOwnedBy("aw-uid", admittedWL),
			pod("demo-master-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 1, reason: Error}}}]}`)},
		wantState: Admitted,
		want:      "AppWrapper demo: Admitted (Resetting, 1 retry), pods ready 0/2: FoundFailedPods; pod demo-master-0 (container pytorch) exited 1",
	}, {
		name: "failed, with the pod that failed",
		objects: []string{appWrapper(`{phase: Failed, resettingCount: 3, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}`),
			workloadOwnedBy("aw-uid", `{conditions: [{type: Finished, status: 'True', reason: Failed, message: "the job failed"}]}`),
			pod("demo-master-0", awPods, `{phase: Succeeded}`),
			pod("demo-worker-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 137, reason: OOMKilled}}}]}`)},
		wantState: Failed,
		want:      "AppWrapper demo: Failed (3 retries): FoundFailedPods; pod demo-worker-0 (container pytorch) ran out of memory (OOMKilled: killed for using more than its memory limit)",
	}, {
		name: "failed, its pods gone: Kueue's word",
		objects: []string{appWrapper(`{phase: Failed}`),
			workloadOwnedBy("aw-uid", `{conditions: [{type: Finished, status: 'True', reason: Failed, message: "the job failed"}]}`)},
		wantState: Failed,
		want:      "AppWrapper demo: Failed: the job failed",
	}, {
		name:      "succeeded",
		objects:   []string{appWrapper(`{phase: Succeeded}`), pod("demo-master-0", awPods, `{phase: Succeeded}`), pod("demo-worker-0", awPods, `{phase: Succeeded}`)},
		wantState: Succeeded,
		want:      "AppWrapper demo: Succeeded, pods succeeded 2/2",
	}, {
		name:      "being deleted",
		objects:   []string{strings.Replace(appWrapper(`{phase: Terminating}`), "uid: aw-uid", "uid: aw-uid\n  deletionTimestamp: '2026-01-01T00:00:00Z'", 1)},
		wantState: Deleting,
		want:      "AppWrapper demo: Deleting (Terminating)",
	}, {
		name: "a bare PyTorchJob, running",
		ref:  Ref{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"},
		objects: []string{pyTorchJob(`{conditions: [{type: Created, status: 'True'}, {type: Running, status: 'True'}]}`),
			pod("demo-master-0", "{training.kubeflow.org/job-name: demo}", readyPod),
			pod("demo-worker-0", "{training.kubeflow.org/job-name: demo}", readyPod),
			pod("demo-worker-1", "{training.kubeflow.org/job-name: demo}", `{phase: Pending}`)},
		wantState: Running,
		want:      "PyTorchJob demo: Running, pods ready 2/3",
	}, {
		name:      "a bare PyTorchJob, suspended by Kueue",
		ref:       Ref{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"},
		objects:   []string{strings.Replace(pyTorchJob(`{}`), "runPolicy: {}", "runPolicy: {suspend: true}", 1)},
		wantState: Queued,
		want:      "PyTorchJob demo: Queued in LocalQueue team-a: Kueue has not made a Workload for it yet",
	}, {
		name: "a bare PyTorchJob, failed",
		ref:  Ref{Kind: "PyTorchJob", Namespace: "ml", Name: "demo"},
		objects: []string{pyTorchJob(`{conditions: [{type: Running, status: 'False'}, {type: Failed, status: 'True', reason: PyTorchJobFailed,
  message: "PyTorchJob ml/demo is failed because 1 Worker replica(s) failed."}]}`)},
		wantState: Failed,
		want:      "PyTorchJob demo: Failed: PyTorchJobFailed: PyTorchJob ml/demo is failed because 1 Worker replica(s) failed.",
	}, {
		name: "a bare PyTorchTrainingJob, failed, its pods gone",
		ref:  Ref{Kind: "PyTorchTrainingJob", Namespace: "ml", Name: "demo"},
		objects: []string{`
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata: {name: demo, namespace: ml, uid: t9k-uid}
spec:
  replicaSpecs:
  - {type: master, replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
  - {type: worker, replicas: 3, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
status:
  phase: Failed
  backoffCount: 2
  conditions:
  - {type: Initialized, status: 'True'}
  - {type: Failed, status: 'True', reason: ReplicaFailed, message: "worker 2 failed"}
  tasks:
  - type: worker
    replicaStatus:
    - {name: "0", phase: Succeeded, containers: [{name: pytorch, state: Terminated, exitCode: 0}]}
    - {name: "2", phase: Failed, containers: [{name: pytorch, state: Terminated, exitCode: 3}]}
`},
		wantState: Failed,
		want:      "PyTorchTrainingJob demo: Failed (2 retries): ReplicaFailed: worker 2 failed; worker-2 (container pytorch) exited 3",
	}, {
		name: "a bare DeepSpeedJob, waiting in T9k's queue; its pods by their owner",
		ref:  Ref{Kind: "DeepSpeedJob", Namespace: "ml", Name: "demo"},
		objects: []string{`
apiVersion: batch.tensorstack.dev/v1beta1
kind: DeepSpeedJob
metadata: {name: demo, namespace: ml, uid: t9k-uid}
spec:
  scheduler: {t9kScheduler: {queue: research}}
  worker: {replicas: 4, template: {spec: {containers: [{name: worker, image: busybox}]}}}
status: {phase: Pending}
`, strings.Replace(pod("demo-worker-0", "{}", "{phase: Pending}"), "labels: {}", "ownerReferences: [{apiVersion: batch.tensorstack.dev/v1beta1, kind: DeepSpeedJob, name: demo, uid: t9k-uid}]", 1),
			pod("demo-worker-1", "{}", "{phase: Pending}")},
		wantState: Queued,
		want:      "DeepSpeedJob demo: Queued in T9k queue research",
		check: func(t *testing.T, s Status) {
			if s.Pods.Pending != 1 || s.Pods.Expected != 4 {
				t.Errorf("Pods = %+v, want 1 pending of 4 expected", s.Pods)
			}
		},
	}, {
		name: "a JobSet in an AppWrapper: its pods by the AppWrapper's label",
		objects: []string{appWrapperOf(wrappedJobSet, "{phase: Running}"),
			workloadOwnedBy("aw-uid", admittedWL),
			pod("demo-node-0-0", "{workload.codeflare.dev/appwrapper: demo, jobset.sigs.k8s.io/jobset-name: demo}", readyPod),
			pod("demo-node-0-1", "{workload.codeflare.dev/appwrapper: demo, jobset.sigs.k8s.io/jobset-name: demo}", "{phase: Pending}")},
		wantState: Admitted,
		want:      "AppWrapper demo: Admitted, pods ready 1/2",
	}, {
		name:      "a bare JobSet, suspended by Kueue",
		ref:       Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"},
		objects:   []string{jobSet(true, jobSetSuspended), workloadOwnedBy("js-uid", pendingWL)},
		react:     pendingWorkloads,
		wantState: Queued,
		want:      "JobSet demo: Queued in LocalQueue team-a (position 2): Pending: couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed",
	}, {
		name:      "a bare JobSet, admitted by Kueue, not yet resumed by the JobSet controller",
		ref:       Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"},
		objects:   []string{jobSet(false, jobSetSuspended), workloadOwnedBy("js-uid", admittedWL)},
		wantState: Admitted,
		want:      "JobSet demo: Admitted, pods ready 0/2",
	}, {
		name: "a bare JobSet, its pods starting",
		ref:  Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"},
		objects: []string{jobSet(false, jobSetResumed), workloadOwnedBy("js-uid", admittedWL),
			pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, "{phase: Pending}"),
			pod("other-node-0-0", "{jobset.sigs.k8s.io/jobset-name: other}", readyPod)},
		wantState: Admitted,
		want:      "JobSet demo: Admitted, pods ready 1/2",
	}, {
		name: "a bare JobSet, running: every pod ready",
		ref:  Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"},
		objects: []string{jobSet(false, jobSetResumed), workloadOwnedBy("js-uid", admittedWL),
			pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, readyPod)},
		wantState: Running,
		want:      "JobSet demo: Running, pods ready 2/2",
	}, {
		name: "a bare JobSet, failed, with the pod that failed",
		ref:  Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"},
		objects: []string{jobSet(false, `{terminalState: Failed, conditions: [{type: Suspended, status: 'False', reason: ResumeJobs},
  {type: Failed, status: 'True', reason: FailedJobs, message: "jobset failed due to one or more job failures (first failed job: demo-node-0)"}]}`),
			workloadOwnedBy("js-uid", `{conditions: [{type: Finished, status: 'True', reason: Failed, message: "jobset failed"}]}`),
			pod("demo-node-0-0", jobSetPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 1, reason: Error}}}]}`)},
		wantState: Failed,
		want:      "JobSet demo: Failed: FailedJobs: jobset failed due to one or more job failures (first failed job: demo-node-0); pod demo-node-0-0 (container pytorch) exited 1",
	}, {
		name: "a bare JobSet, succeeded",
		ref:  Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"},
		objects: []string{jobSet(false, `{terminalState: Completed, conditions: [{type: Completed, status: 'True', reason: AllJobsCompleted, message: "jobset completed successfully"}]}`),
			pod("demo-node-0-0", jobSetPods, "{phase: Succeeded}"), pod("demo-node-0-1", jobSetPods, "{phase: Succeeded}")},
		wantState: Succeeded,
		want:      "JobSet demo: Succeeded, pods succeeded 2/2",
	}, {
		name: "a bare JobSet, restarting after a failed Job",
		ref:  Ref{Kind: "JobSet", Namespace: "ml", Name: "demo"},
		objects: []string{jobSet(false, `{restarts: 1, conditions: [{type: RestartingJobSet, status: 'True', reason: DefaultFailurePolicy,
  message: "applying RestartJobSet failure policy action (first failed job: demo-node-0)"}]}`)},
		wantState: Admitted,
		want:      "JobSet demo: Admitted (Restarting, 1 retry), pods ready 0/2: DefaultFailurePolicy: applying RestartJobSet failure policy action (first failed job: demo-node-0)",
	}, {
		name:      "a TrainJob, suspended by Kueue",
		ref:       Ref{Kind: "TrainJob", Namespace: "ml", Name: "demo"},
		objects:   []string{trainJob(true, `{conditions: [{type: Suspended, status: 'True', reason: Suspended, message: "TrainJob is suspended"}]}`), workloadOwnedBy("tj-uid", pendingWL)},
		wantState: Queued,
		want:      "TrainJob demo: Queued in LocalQueue team-a: Pending: couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed",
	}, {
		name: "a TrainJob, running: its pods by its JobSet's label",
		ref:  Ref{Kind: "TrainJob", Namespace: "ml", Name: "demo"},
		objects: []string{trainJob(false, `{conditions: [{type: Suspended, status: 'False', reason: Resumed}],
  jobsStatus: [{name: node, ready: 1, succeeded: 0, failed: 0, active: 1, suspended: 0}]}`),
			workloadOwnedBy("tj-uid", admittedWL),
			pod("demo-node-0-0", jobSetPods, readyPod), pod("demo-node-0-1", jobSetPods, readyPod), pod("demo-node-0-2", jobSetPods, readyPod)},
		wantState: Running,
		want:      "TrainJob demo: Running, pods ready 3/3",
	}, {
		name: "a TrainJob, failed: its JobSet's reason, with the pod that failed",
		ref:  Ref{Kind: "TrainJob", Namespace: "ml", Name: "demo"},
		objects: []string{trainJob(false, `{conditions: [{type: Suspended, status: 'False', reason: Resumed},
  {type: Failed, status: 'True', reason: FailedJobs, message: "jobset failed due to one or more job failures (first failed job: demo-node-0)"}]}`),
			pod("demo-node-0-0", jobSetPods, "{phase: Running}"),
			pod("demo-node-0-2", jobSetPods, `{phase: Failed, containerStatuses: [{name: node, state: {terminated: {exitCode: 137, reason: OOMKilled}}}]}`)},
		wantState: Failed,
		want:      "TrainJob demo: Failed: FailedJobs: jobset failed due to one or more job failures (first failed job: demo-node-0); pod demo-node-0-2 (container node) ran out of memory (OOMKilled: killed for using more than its memory limit)",
	}, {
		name:      "a TrainJob, complete",
		ref:       Ref{Kind: "TrainJob", Namespace: "ml", Name: "demo"},
		objects:   []string{trainJob(false, `{conditions: [{type: Complete, status: 'True', reason: AllJobsCompleted, message: "jobset completed successfully"}]}`)},
		wantState: Succeeded,
		want:      "TrainJob demo: Succeeded",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := cluster(t, tc.react, tc.objects...)
			ref := tc.ref
			if ref.Kind == "" {
				ref = Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}
			}
			s, err := client.Status(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if s.State != tc.wantState {
				t.Errorf("State = %s, want %s", s.State, tc.wantState)
			}
			if got := s.Line(); got != tc.want {
				t.Errorf("Line():\n got %s\nwant %s", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

// pyTorchJob is a bare PyTorchJob of three pods in the LocalQueue team-a.
func pyTorchJob(status string) string {
	return `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: demo
  namespace: ml
  uid: ptj-uid
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  runPolicy: {}
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
status: ` + status
}

// jobSet is a bare JobSet of two pods in the LocalQueue team-a, suspended
// or not, with the given status.
func jobSet(suspend bool, status string) string {
	return fmt.Sprintf(`
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: demo
  namespace: ml
  uid: js-uid
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  suspend: %t
  replicatedJobs:
  - name: node
    replicas: 1
    template:
      spec:
        parallelism: 2
        completions: 2
        template: {spec: {containers: [{name: pytorch, image: busybox}]}}
status: %s`, suspend, status)
}

// trainJob is a TrainJob of three nodes in the LocalQueue team-a, suspended
// or not, with the given status.
func trainJob(suspend bool, status string) string {
	return fmt.Sprintf(`
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: demo
  namespace: ml
  uid: tj-uid
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  suspend: %t
  runtimeRef: {apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime, name: torch-distributed}
  trainer: {image: busybox, numNodes: 3, resourcesPerNode: {limits: {nvidia.com/gpu: 8}}}
status: %s`, suspend, status)
}

const (
	// jobSetPods are the pods of the JobSet demo, and of the TrainJob demo's.
	jobSetPods      = "{jobset.sigs.k8s.io/jobset-name: demo, jobset.sigs.k8s.io/replicatedjob-name: node}"
	jobSetSuspended = "{conditions: [{type: Suspended, status: 'True', reason: SuspendedJobs, message: jobset is suspended}]}"
	jobSetResumed   = "{conditions: [{type: Suspended, status: 'False', reason: ResumeJobs, message: jobset is resumed}]}"
)

func TestStatusLines(t *testing.T) {
	client := cluster(t, nil,
		appWrapper(`{phase: Failed, resettingCount: 3, conditions: [{type: Unhealthy, status: 'True', reason: FoundFailedPods}]}`),
		workloadOwnedBy("aw-uid", `{admission: {clusterQueue: team-a-cq}, conditions: [{type: Finished, status: 'True', reason: Failed}]}`),
		pod("demo-master-0", awPods, `{phase: Succeeded}`),
		pod("demo-worker-0", awPods, `{phase: Failed, containerStatuses: [{name: pytorch, state: {terminated: {exitCode: 137, reason: OOMKilled,
  message: "Killed\nwhile loading the checkpoint"}}}]}`))
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	want := `AppWrapper "demo" in namespace "ml": Failed (3 retries)
  why:       FoundFailedPods
  failed:    pod demo-worker-0 (container pytorch) ran out of memory (OOMKilled: killed for using more than its memory limit)
             | Killed
             | while loading the checkpoint
  pods:      ready 0/2; 1 succeeded, 1 failed
  queue:     LocalQueue team-a, ClusterQueue team-a-cq
  workload:  appwrapper-demo-7d9f2
`
	if got := s.Lines(); got != want {
		t.Errorf("Lines():\n%s\nwant:\n%s", got, want)
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"kind":"AppWrapper","name":"demo","namespace":"ml","state":"Failed","reason":"FoundFailedPods","queue":"team-a",` +
		`"clusterQueue":"team-a-cq","workload":"appwrapper-demo-7d9f2","pods":{"expected":2,"pending":0,"running":0,"ready":0,"succeeded":1,"failed":1,"restarts":0},` +
		`"retries":3,"gpus":0,"failure":{"key":"/pytorch/0","pod":"demo-worker-0","container":"pytorch","reason":"OOMKilled","exitCode":137,"signal":"SIGKILL",` +
		`"lines":["Killed","while loading the checkpoint"]}}`
	if string(data) != wantJSON {
		t.Errorf("JSON:\n got %s\nwant %s", data, wantJSON)
	}
}

// The accelerators of a job are counted, of whatever vendor, and named.
func TestStatusCountsAccelerators(t *testing.T) {
	for resource, want := range map[string]string{"nvidia.com/gpu": "24 nvidia.com/gpu", "amd.com/gpu": "24 amd.com/gpu", "huawei.com/Ascend910": "24 huawei.com/Ascend910"} {
		job := strings.Replace(trainJob(false, "{}"), "nvidia.com/gpu: 8", resource+": 8, rdma/roce_gdr: 1", 1)
		s, err := cluster(t, nil, job).Status(context.Background(), Ref{Kind: "TrainJob", Namespace: "ml", Name: "demo"})
		if err != nil {
			t.Fatal(err)
		}
		if s.GPUs != 24 || s.GPUResource != resource || !strings.Contains(s.Lines(), "\n  gpus:      "+want+"\n") {
			t.Errorf("%s: GPUs %d of %q, lines:\n%s", resource, s.GPUs, s.GPUResource, s.Lines())
		}
	}
}

// What the user may not read is said, and the rest is still shown.
func TestStatusForbidden(t *testing.T) {
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC"))
		})
	}, appWrapper("{phase: Suspended}"), workloadOwnedBy("aw-uid", pendingWL))
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	want := `AppWrapper "demo" in namespace "ml": Queued
  why:       Pending: couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed
  pods:      not read (2 expected)
  queue:     LocalQueue team-a
  workload:  appwrapper-demo-7d9f2
  not read:  its pods: you may not read them (RBAC)
`
	if got := s.Lines(); got != want {
		t.Errorf("Lines():\n%s\nwant:\n%s", got, want)
	}
}

func TestStatusUnreachable(t *testing.T) {
	client := cluster(t, func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "workloads", func(action clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewUnauthorized("token expired")
		})
	}, appWrapper("{phase: Running}"))
	_, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	var unreachable Unreachable
	if !errors.As(err, &unreachable) {
		t.Errorf("err = %v, want Unreachable", err)
	}
}

func TestFind(t *testing.T) {
	client := fake(t, clustertest.Fake{
		Objects: appWrapper("{}") + "\n---\n" + strings.Replace(pyTorchJob("{}"), "name: demo", "name: bare", 1),
		Without: []string{"batch.tensorstack.dev/v1beta1", "jobset.x-k8s.io/v1alpha2"},
	})
	for name, want := range map[string]Ref{
		"demo": {Kind: "AppWrapper", Namespace: "ml", Name: "demo"},
		"bare": {Kind: "PyTorchJob", Namespace: "ml", Name: "bare"},
	} {
		got, err := client.Find(context.Background(), "ml", name)
		if err != nil || got != want {
			t.Errorf("Find(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
	_, err := client.Find(context.Background(), "ml", "missing")
	want := `no job "missing" in namespace "ml": no AppWrapper, TrainJob or PyTorchJob of that name (this cluster serves no JobSets, PyTorchTrainingJobs or DeepSpeedJobs); jobs here: bare, demo; check the name, and the namespace (-n NAMESPACE)`
	if err == nil || err.Error() != want {
		t.Errorf("Find(missing) error:\n got %v\nwant %s", err, want)
	}
}

// A TrainJob is found before the JobSet that the Trainer made for it, of
// the same name.
func TestFindATrainJobBeforeItsJobSet(t *testing.T) {
	trainersJobSet := strings.Replace(jobSet(false, "{}"), "uid: js-uid", "uid: js-uid\n  ownerReferences: [{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: demo, uid: tj-uid, controller: true}]", 1)
	client := fake(t, clustertest.Fake{Objects: trainJob(false, "{}") + "\n---\n" + trainersJobSet + "\n---\n" + strings.Replace(jobSet(false, "{}"), "name: demo", "name: bare", 1)})
	for name, want := range map[string]Ref{
		"demo": {Kind: "TrainJob", Namespace: "ml", Name: "demo"},
		"bare": {Kind: "JobSet", Namespace: "ml", Name: "bare"},
	} {
		got, err := client.Find(context.Background(), "ml", name)
		if err != nil || got != want {
			t.Errorf("Find(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
}

func TestStatusNotFound(t *testing.T) {
	client := cluster(t, nil)
	_, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	var missing NotFound
	if !errors.As(err, &missing) || err.Error() != `no AppWrapper "demo" in namespace "ml"` {
		t.Errorf("err = %v, want NotFound", err)
	}
}

// event is an event of the namespace ml about an object.
func event(name, typ, kind, object, reason, message, last string, count int) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Event
metadata: {name: %s, namespace: ml}
type: %s
involvedObject: {kind: %s, name: %s, namespace: ml}
reason: %s
message: %q
count: %d
lastTimestamp: '%s'`, name, typ, kind, object, reason, message, count, last)
}

// Status says the recent Warning events of the job, its Workload and its
// pods, the latest first, and not those of other objects, nor Normal ones.
func TestStatusWarnings(t *testing.T) {
	client := cluster(t, nil,
		appWrapper("{phase: Running}"), workloadOwnedBy("aw-uid", admittedWL),
		pod("demo-master-0", awPods, readyPod),
		pod("demo-worker-0", awPods, `{phase: Pending, conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable, message: "0/4 nodes are available"}]}`),
		event("e1", "Warning", "Pod", "demo-worker-0", "FailedScheduling", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", "2026-01-01T10:05:00Z", 7),
		event("e2", "Warning", "Pod", "demo-master-0", "BackOff", "Back-off restarting failed container pytorch", "2026-01-01T10:04:00Z", 2),
		event("e3", "Warning", "Pod", "demo-master-0", "FailedMount", "MountVolume.SetUp failed for volume \"data\":\nnot found", "2026-01-01T10:01:00Z", 1),
		// The training operator says a failed pod's whole termination
		// message: status cuts it.
		event("e4", "Warning", "PyTorchJob", "demo", "Error", "Error pod demo-worker-0 container pytorch exitCode: 1 terminated message: "+strings.Repeat("x", 400), "2026-01-01T10:00:00Z", 1),
		event("e5", "Normal", "Pod", "demo-master-0", "Pulled", "pulled", "2026-01-01T10:06:00Z", 1),
		event("e6", "Warning", "Pod", "other-master-0", "BackOff", "not this job's", "2026-01-01T10:06:00Z", 1),
	)
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	want := `AppWrapper "demo" in namespace "ml": Admitted
  pods:      ready 1/2; 1 pending
  problem:   pod demo-worker-0 cannot be scheduled: 0/4 nodes are available
  queue:     LocalQueue team-a, ClusterQueue team-a-cq
  workload:  appwrapper-demo-7d9f2
  warning:   FailedScheduling (Pod demo-worker-0, 7 times): 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.
  warning:   BackOff (Pod demo-master-0, 2 times): Back-off restarting failed container pytorch
  warning:   FailedMount (Pod demo-master-0): MountVolume.SetUp failed for volume "data": not found
  warning:   Error (PyTorchJob demo): Error pod demo-worker-0 container pytorch exitCode: 1 terminated message: ` + strings.Repeat("x", 200) + `…
`
	if got := s.Lines(); got != want {
		t.Errorf("Lines():\n%s\nwant:\n%s", got, want)
	}
}

// A name no job has: the jobs there, and the closest.
func TestFindTheClosest(t *testing.T) {
	client := fake(t, clustertest.Fake{Objects: appWrapper("{}") + "\n---\n" + strings.Replace(pyTorchJob("{}"), "name: demo", "name: llama-8b", 1)})
	_, err := client.Find(context.Background(), "ml", "lama-8b")
	want := `no job "lama-8b" in namespace "ml": no AppWrapper, TrainJob, PyTorchJob, JobSet, PyTorchTrainingJob or DeepSpeedJob of that name; jobs here: demo, llama-8b; did you mean "llama-8b"? Otherwise check the namespace (-n NAMESPACE)`
	if err == nil || err.Error() != want {
		t.Errorf("Find error:\n got %v\nwant %s", err, want)
	}
	if !errors.As(err, &NoSuchJob{}) {
		t.Errorf("err = %T, want NoSuchJob", err)
	}
}

// A job of a kind whose CRD the cluster does not serve: every command
// says so, not that the job is missing.
func TestAKindTheClusterDoesNotServe(t *testing.T) {
	client := fake(t, clustertest.Fake{Without: []string{"batch.tensorstack.dev/v1beta1"}})
	client.LogSource = &fakeLogs{}
	ref := Ref{Kind: "DeepSpeedJob", Namespace: "ml", Name: "demo"}
	want := `this cluster does not serve DeepSpeedJobs (batch.tensorstack.dev/v1beta1): T9k's job controller is not installed, so there is no such job here; check --context, or ask an administrator to install it`
	ctx := context.Background()
	_, err := client.Status(ctx, ref)
	require.EqualError(t, err, want)
	_, err = client.Stop(ctx, ref)
	require.EqualError(t, err, want)
	_, err = client.Delete(ctx, ref, true)
	require.EqualError(t, err, want)
	_, err = client.Logs(ctx, LogRequest{Ref: ref}, func(LogLine) {}, func(string) {}, func(Noticed) {})
	require.EqualError(t, err, want)
}

// Kueue records why it holds a Workload back as a Warning event too: the
// lines say it once, as why; the JSON keeps the event.
func TestStatusSaysThePendingReasonOnce(t *testing.T) {
	client := cluster(t, nil,
		appWrapper("{phase: Suspended}"), workloadOwnedBy("aw-uid", pendingWL),
		event("e1", "Warning", "Workload", "appwrapper-demo-7d9f2", "Pending",
			"couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed", "2026-01-01T10:05:00Z", 3),
	)
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 {
		t.Fatalf("Warnings = %v, want the Workload's event", s.Warnings)
	}
	lines := s.Lines()
	if strings.Contains(lines, "warning:") || !strings.Contains(lines, "why:       Pending: couldn't assign flavors to pod set 0-0: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed") {
		t.Errorf("Lines():\n%s\nwant the reason once, as why", lines)
	}
}
