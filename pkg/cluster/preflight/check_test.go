package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/cluster/clustertest"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/workspace"
)

// check renders settings (YAML, as the file settings.yaml) and checks the
// job against the cluster, giving the findings as the command line writes
// them.
func check(t *testing.T, f clustertest.Fake, yaml string) []string {
	t.Helper()
	found, err := checkErr(t, f, yaml)
	require.NoError(t, err)
	return found
}

func checkErr(t *testing.T, f clustertest.Fake, yaml string) ([]string, error) {
	t.Helper()
	return checkWith(t, fake(t, f), yaml, nil)
}

// checkWith checks the job of the settings, shipping the workspace ws
// (nil for none), against the cluster of the client.
func checkWith(t *testing.T, client *cluster.Client, yaml string, ws *workspace.Packed) ([]string, error) {
	t.Helper()
	t.Chdir(t.TempDir())
	require.NoError(t, os.WriteFile("settings.yaml", []byte(yaml), 0o600))
	in, err := settings.Load(settings.Options{Files: []string{"settings.yaml"}})
	require.NoError(t, err)
	result, err := render.Render(in, nil, ws)
	require.NoError(t, err)
	job, err := cluster.NewJob(result.Manifest, client.Namespace)
	require.NoError(t, err)
	job.Carry(result.ConfigMaps)
	found, err := Check(context.Background(), client, job, result.Values)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, d := range in.Locate(found) {
		lines = append(lines, d.String())
	}
	return lines, nil
}

// fake is a client of a fake cluster, in namespace ml.
func fake(t *testing.T, f clustertest.Fake) *cluster.Client {
	dyn, disc := f.Clients(t)
	return &cluster.Client{Dynamic: dyn, Watches: dyn, Discovery: disc, PodSource: clustertest.Pods{Dynamic: dyn}, ObjectSource: clustertest.Objects{Dynamic: dyn}, Namespace: "ml", Server: "https://fake"}
}

const helloworld = `jobName: hello
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
numPods: 2
numGpusPerPod: 8
mainProgram: train.py
`

func TestCheckFindsNothingWrongWithAJobThatCanRun(t *testing.T) {
	require.Empty(t, check(t, clustertest.Fake{}, helloworld))
}

func TestCheckAQueueThatDoesNotExist(t *testing.T) {
	require.Equal(t, []string{
		`settings.yaml:6:12: queueName: no LocalQueue "reserch" in namespace "ml", and the job would wait for it forever (those here: default-queue, research); did you mean "research"?`,
	}, check(t, clustertest.Fake{}, helloworld+"queueName: reserch\n"))
}

// A queue Kueue holds (stopPolicy, on the LocalQueue or its ClusterQueue)
// admits nothing until an administrator resumes it: a warning, since the
// job may wait for that.
func TestCheckAStoppedQueue(t *testing.T) {
	queues := `
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: held, namespace: ml}
spec: {clusterQueue: cluster-queue, stopPolicy: Hold}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: drained, namespace: ml}
spec: {clusterQueue: drained-cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: drained-cq}
spec:
  stopPolicy: HoldAndDrain
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources: [{name: cpu, nominalQuota: 512}, {name: memory, nominalQuota: 4Ti}, {name: nvidia.com/gpu, nominalQuota: 32}]
`
	require.Equal(t, []string{
		`settings.yaml:6:12: warning: queueName: LocalQueue "held" is stopped (stopPolicy: Hold): Kueue admits nothing from it until an administrator resumes it`,
	}, check(t, clustertest.Fake{Objects: queues}, helloworld+"queueName: held\n"))
	require.Equal(t, []string{
		`settings.yaml:6:12: warning: queueName: ClusterQueue "drained-cq" (behind LocalQueue "drained") is stopped (stopPolicy: HoldAndDrain): Kueue admits nothing from it until an administrator resumes it`,
	}, check(t, clustertest.Fake{Objects: queues}, helloworld+"queueName: drained\n"))
}

func TestCheckAJobLargerThanTheQuota(t *testing.T) {
	require.Equal(t, []string{
		`settings.yaml:4:16: numGpusPerPod: the job requests 64 nvidia.com/gpu in all (8 pods × 8), but ClusterQueue "cluster-queue" (behind LocalQueue "default-queue") can grant at most 32 (nominal 32, no borrowing): Kueue will never admit it; ask for less, or name a LocalQueue of a larger ClusterQueue`,
	}, check(t, clustertest.Fake{}, strings.Replace(helloworld, "numPods: 2", "numPods: 8", 1)))
}

func TestCheckAResourceTheClusterQueueDoesNotCover(t *testing.T) {
	require.Equal(t, []string{
		`settings.yaml:6:13: numRoceGdr: ClusterQueue "cluster-queue" (behind LocalQueue "default-queue") has no quota for nvidia.com/roce_gdr, which the job requests (2 pods × 2 in all): Kueue will never admit it; ask an administrator to add nvidia.com/roce_gdr to it, or name a LocalQueue whose ClusterQueue covers it`,
	}, check(t, clustertest.Fake{}, helloworld+"numRoceGdr: 2\n"))
}

func TestCheckQuotaWithBorrowing(t *testing.T) {
	cohort := `
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: shared, namespace: ml}
spec: {clusterQueue: %s}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: limited}
spec:
  cohort: all
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: a
      resources: [{name: cpu, nominalQuota: 100}, {name: memory, nominalQuota: 1Ti}, {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 8}]
    - name: b
      resources: [{name: cpu, nominalQuota: 0}, {name: memory, nominalQuota: 0}, {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 0}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: unlimited}
spec:
  cohort: all
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: a
      resources: [{name: cpu, nominalQuota: 100, borrowingLimit: 0}, {name: memory, nominalQuota: 1Ti, borrowingLimit: 0}, {name: nvidia.com/gpu, nominalQuota: 8}]
`
	settings := strings.Replace(helloworld, "numPods: 2", "numPods: 4", 1) + "queueName: shared\n"
	require.Equal(t, []string{
		`settings.yaml:4:16: numGpusPerPod: the job requests 32 nvidia.com/gpu in all (4 pods × 8), but ClusterQueue "limited" (behind LocalQueue "shared") can grant at most 24 (nominal 16, borrowing limit 8): Kueue will never admit it; ask for less, or name a LocalQueue of a larger ClusterQueue`,
	}, check(t, clustertest.Fake{Objects: strings.ReplaceAll(cohort, "%s", "limited")}, settings))
	// Without a borrowing limit, up to the rest of the cohort: 8 + 16.
	require.Equal(t, []string{
		`settings.yaml:4:16: numGpusPerPod: the job requests 32 nvidia.com/gpu in all (4 pods × 8), but ClusterQueue "unlimited" (behind LocalQueue "shared") can grant at most 24 (nominal 8, and 16 it may borrow in cohort "all"): Kueue will never admit it; ask for less, or name a LocalQueue of a larger ClusterQueue`,
	}, check(t, clustertest.Fake{Objects: strings.ReplaceAll(cohort, "%s", "unlimited")}, settings))
	// A Cohort object may hold quota of its own: the most the ClusterQueue
	// may borrow is not known, and nothing is said.
	require.Empty(t, check(t, clustertest.Fake{Objects: strings.ReplaceAll(cohort, "%s", "unlimited") + `
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: all}
`}, settings))
}

func TestCheckObjectsTheSettingsName(t *testing.T) {
	objects := `
apiVersion: v1
kind: Secret
metadata: {name: git-key, namespace: ml}
data: {other: eA==}
---
apiVersion: v1
kind: Secret
metadata: {name: registry, namespace: ml}
type: Opaque
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: datasets, namespace: ml}
`
	settings := helloworld + `priority: hihg-priority
volumes:
- name: data
  claimName: dataset
  mountPath: /data
sshGitCloneConfig:
  secretName: git-key
  configMapName: known-hosts
imagePullSecrets:
- name: registry
serviceAccountName: trainer
mountNVMe:
  storage: 100Gi
multiNicNetworkName: roce
environmentVariables:
- name: TOKEN
  secret: {name: api, key: token}
`
	require.Equal(t, []string{
		`settings.yaml:6:11: priority: no PriorityClass "hihg-priority" on this cluster (those here: default-priority, high-priority); did you mean "high-priority"? Otherwise create it first; or set priority: null to leave priorityClassName out`,
		`settings.yaml:9:14: volumes[0].claimName: no PersistentVolumeClaim "dataset" in namespace "ml" (those here: datasets); did you mean "datasets"? Otherwise create it first`,
		`settings.yaml:12:15: sshGitCloneConfig.secretName: Secret "git-key" in namespace "ml" has no key "id_rsa" (its keys: other); name one of its keys, or add "id_rsa" to it`,
		`settings.yaml:13:18: sshGitCloneConfig.configMapName: no ConfigMap "known-hosts" in namespace "ml" (there are none); create it first, or name one that exists`,
		`settings.yaml:15:9: warning: imagePullSecrets[0].name: Secret "registry" in namespace "ml" is of type Opaque, not kubernetes.io/dockerconfigjson: the kubelet pulls no image with it; recreate it with kubectl create secret docker-registry`,
		`settings.yaml:16:21: serviceAccountName: no ServiceAccount "trainer" in namespace "ml" (there are none); create it first, or name one that exists; or remove serviceAccountName to use the namespace's default`,
		`settings.yaml:17:1: mountNVMe: no StorageClass "odf-lvm-vg1" on this cluster (there are none); create it first, or name one that exists; or name the cluster's NVMe StorageClass in mountNVMe.storageClassName`,
		`settings.yaml:19:22: multiNicNetworkName: no NetworkAttachmentDefinition "roce" in namespace "ml" (there are none); create it first, or name one that exists`,
		`settings.yaml:22:18: environmentVariables[0].secret.name: no Secret "api" in namespace "ml" (those here: git-key, registry); create it first, or name one that exists`,
	}, check(t, clustertest.Fake{Objects: objects}, settings))
}

func TestCheckAnAPITheClusterDoesNotServe(t *testing.T) {
	require.Equal(t, []string{
		`settings.yaml:6:22: multiNicNetworkName: this cluster serves no NetworkAttachmentDefinitions (k8s.cni.cncf.io/v1), so NetworkAttachmentDefinition "roce" in namespace "ml" cannot exist; remove multiNicNetworkName, or ask an administrator which to use`,
	}, check(t, clustertest.Fake{Without: []string{"k8s.cni.cncf.io/v1"}}, helloworld+"multiNicNetworkName: roce\n"))
	require.Equal(t, []string{
		`settings.yaml:1:1: wrapper: this cluster does not serve AppWrappers (workload.codeflare.dev/v1beta2): the AppWrapper controller is not installed; ask an administrator to install it, or set wrapper: none to submit the job alone`,
	}, check(t, clustertest.Fake{Without: []string{"workload.codeflare.dev/v1beta2"}}, helloworld))
	require.Equal(t, []string{
		`settings.yaml:6:10: jobKind: this cluster does not serve PyTorchTrainingJobs (batch.tensorstack.dev/v1beta1): T9k's job controller is not installed; ask an administrator to install it, or choose a jobKind this cluster runs`,
	}, check(t, clustertest.Fake{Without: []string{"batch.tensorstack.dev/v1beta1"}}, helloworld+"jobKind: PyTorchTrainingJob\n"))
	require.Equal(t, []string{
		`settings.yaml:6:12: queueName: this cluster serves no LocalQueues (kueue.x-k8s.io/v1beta1): Kueue is not installed, and nothing would queue the job; set queueName: null to submit it without a queue`,
	}, check(t, clustertest.Fake{Without: []string{"kueue.x-k8s.io/v1beta1"}}, helloworld+"queueName: default-queue\n"))
}

func TestCheckAJobKueueDoesNotManage(t *testing.T) {
	require.Equal(t, []string{
		`settings.yaml:6:10: wrapper: Kueue does not manage PyTorchJobs on this cluster (its kubeflow.org/pytorchjob integration is off, the default since Kueue v0.19): the job would start at once, outside every queue and quota, and queueName would do nothing; set wrapper: AppWrapper, or ask an administrator to turn the integration on`,
	}, check(t, clustertest.Fake{Unmanaged: true}, helloworld+"wrapper: none\n"))
}

// The accelerators a pod asks for: some node must offer them, as many, and
// the ClusterQueue must have quota for them; both findings name the
// resource, at numGpusPerPod.
func TestCheckTheAccelerators(t *testing.T) {
	require.Equal(t, []string{
		`settings.yaml:4:16: numGpusPerPod: ClusterQueue "cluster-queue" (behind LocalQueue "default-queue") has no quota for amd.com/gpu, which the job requests (2 pods × 8 in all): Kueue will never admit it; ask an administrator to add amd.com/gpu to it, or name a LocalQueue whose ClusterQueue covers it`,
		`settings.yaml:4:16: numGpusPerPod: no node of the cluster offers amd.com/gpu (of its 1 node): the pods would never be scheduled; check gpuResName (ask an administrator which accelerators the nodes have), or set numGpusPerPod: 0`,
	}, check(t, clustertest.Fake{}, helloworld+"gpuResName: amd.com/gpu\n"))
	require.Equal(t, []string{
		`settings.yaml:4:16: numGpusPerPod: each pod asks for 16 nvidia.com/gpu, but no node offers more than 8 (1 node of 1): the pods would never be scheduled; ask for 8 or fewer a pod, and more pods`,
	}, check(t, clustertest.Fake{}, strings.Replace(helloworld, "numGpusPerPod: 8", "numGpusPerPod: 16", 1)))
	amd := `
apiVersion: v1
kind: Node
metadata: {name: amd-node-0}
status: {allocatable: {cpu: 64, memory: 1Ti, amd.com/gpu: 8}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: amd-queue}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory, amd.com/gpu]
    flavors:
    - name: amd
      resources:
      - {name: cpu, nominalQuota: 512}
      - {name: memory, nominalQuota: 4Ti}
      - {name: amd.com/gpu, nominalQuota: 16}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: amd-queue, namespace: ml}
spec: {clusterQueue: amd-queue}
`
	require.Empty(t, check(t, clustertest.Fake{Objects: amd}, helloworld+"gpuResName: amd.com/gpu\nqueueName: amd-queue\n"))
	// Without GPUs, nodes are not asked about.
	require.Empty(t, check(t, clustertest.Fake{React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) { panic("nodes listed") })
	}}, strings.Replace(helloworld, "numGpusPerPod: 8", "numGpusPerPod: 0", 1)))
}

func TestCheckWhatTheUserMayNotDoOrRead(t *testing.T) {
	forbidden := func(resource string) func(*dynamicfake.FakeDynamicClient) {
		return func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor("get", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "x", errors.New("RBAC"))
			})
		}
	}
	require.Equal(t, []string{
		`settings.yaml:6:12: namespace: you may not create AppWrappers in namespace "ml" (RBAC); ask an administrator for the right, or choose a namespace where you may (namespace:, or -n)`,
	}, check(t, clustertest.Fake{Denied: true}, helloworld+"namespace: ml\n"))
	require.Equal(t, []string{
		`settings.yaml:1:1: could not check: queueName: the quota of ClusterQueue "cluster-queue" (behind LocalQueue "default-queue") (needs get clusterqueues.kueue.x-k8s.io)`,
	}, check(t, clustertest.Fake{React: forbidden("clusterqueues")}, helloworld))
	require.Equal(t, []string{
		`settings.yaml:4:16: could not check: numGpusPerPod: the nodes that offer nvidia.com/gpu (needs list nodes)`,
	}, check(t, clustertest.Fake{React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("list", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("RBAC"))
		})
	}}, helloworld))
}

func TestCheckWhatTheAPIServerRefuses(t *testing.T) {
	webhook := func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("create", "appwrappers", func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "workload.codeflare.dev", Resource: "appwrappers"}, "hello",
				errors.New(`admission webhook "vappwrapper.kb.io" denied the request: components[0]: too many podSets`))
		})
	}
	require.Equal(t, []string{
		`settings.yaml:1:1: the API server refuses the AppWrapper (a dry-run create): appwrappers.workload.codeflare.dev "hello" is forbidden: admission webhook "vappwrapper.kb.io" denied the request: components[0]: too many podSets`,
	}, check(t, clustertest.Fake{React: webhook}, helloworld))

	exists := clustertest.Fake{Objects: `
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: hello, namespace: ml}
`}
	exists.React = func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("create", "appwrappers", func(a clienttesting.Action) (bool, runtime.Object, error) {
			obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
			if obj.GetName() == "hello" {
				return true, nil, apierrors.NewAlreadyExists(a.GetResource().GroupResource(), "hello")
			}
			require.Equal(t, "hello-", obj.GetGenerateName())
			return false, nil, nil
		})
	}
	require.Equal(t, []string{
		`settings.yaml:1:10: warning: jobName: an AppWrapper "hello" exists in namespace "ml" already; generator submit replaces it once it has finished (at once with --force), or choose another jobName`,
	}, check(t, exists, helloworld))
}

func TestCheckAClusterThatDoesNotAnswer(t *testing.T) {
	client := fake(t, clustertest.Fake{})
	client.Discovery.(*discoveryfake.FakeDiscovery).PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/apis", Err: errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")}
	})
	_, err := Check(context.Background(), client, &cluster.Job{Object: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper"}}}, nil)
	var u cluster.Unreachable
	require.ErrorAs(t, err, &u)
	require.EqualError(t, err, `cannot reach the cluster at https://fake: Get "https://10.0.0.1:6443/apis": dial tcp 10.0.0.1:6443: connect: connection refused; check that it is up, and --context and --kubeconfig`)
}

func TestCheckANamespaceThatDoesNotExist(t *testing.T) {
	namespaces := `
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
`
	require.Equal(t, []string{
		`settings.yaml:6:12: namespace: no namespace "tema-a" on this cluster; did you mean "team-a"? Otherwise create it first; or choose another with namespace: or -n`,
	}, check(t, clustertest.Fake{Objects: namespaces}, helloworld+"namespace: tema-a\n"))
	// Another team's namespace is no typo of it.
	require.Equal(t, []string{
		`settings.yaml:6:12: namespace: no namespace "team-b" on this cluster; create it first, or name one that exists; or choose another with namespace: or -n`,
	}, check(t, clustertest.Fake{Objects: namespaces}, helloworld+"namespace: team-b\n"))
}

// The render's guess about a priority close to MLBatch's names is moot once
// the cluster was asked about that PriorityClass, and only then.
func TestAnswersTheRendersGuessAboutThePriority(t *testing.T) {
	guess := diag.Diagnostic{Severity: diag.Warning, Path: diag.Path{"priority"}, Message: "high names no MLBatch PriorityClass"}
	require.True(t, Answers(nil, guess), "the cluster has the PriorityClass")
	require.True(t, Answers(diag.List{{Path: diag.Path{"priority"}, Message: "no PriorityClass"}}, guess))
	require.False(t, Answers(diag.List{{Severity: diag.Unchecked, Path: diag.Path{"priority"}}}, guess), "the cluster would not say")
	require.False(t, Answers(nil, diag.Diagnostic{Severity: diag.Warning, Path: diag.Path{"sharedMemorySize"}}))
}

func TestCheckAJobSetAgainstTheQuota(t *testing.T) {
	// A bare JobSet's pods are counted from its replicated job: numPods
	// pods of 8 GPUs, more than cluster-queue's 32.
	require.Equal(t, []string{
		`settings.yaml:4:16: numGpusPerPod: the job requests 48 nvidia.com/gpu in all (6 pods × 8), but ClusterQueue "cluster-queue" (behind LocalQueue "default-queue") can grant at most 32 (nominal 32, no borrowing): Kueue will never admit it; ask for less, or name a LocalQueue of a larger ClusterQueue`,
	}, check(t, clustertest.Fake{}, strings.Replace(helloworld, "numPods: 2", "numPods: 6", 1)+"jobKind: JobSet\nwrapper: none\n"))
	require.Equal(t, []string{
		`settings.yaml:7:10: wrapper: Kueue does not manage JobSets on this cluster (its jobset.x-k8s.io/jobset integration is off): the job would start at once, outside every queue and quota, and queueName would do nothing; set wrapper: AppWrapper, or ask an administrator to turn the integration on`,
	}, check(t, clustertest.Fake{Unmanaged: true}, helloworld+"jobKind: JobSet\nwrapper: none\n"))
}

func TestCheckATrainJob(t *testing.T) {
	trainJob := helloworld + "jobKind: TrainJob\n"
	clusterRuntime := `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch-distributed}
`
	require.Empty(t, check(t, clustertest.Fake{Objects: clusterRuntime}, trainJob))
	require.Equal(t, []string{
		`settings.yaml:1:1: trainingRuntime: no ClusterTrainingRuntime "torch-distributed" on this cluster (there are none); create it first, or name one that exists`,
	}, check(t, clustertest.Fake{}, trainJob))
	// Two webhooks refuse a TrainJob whose runtime does not exist, Trainer's
	// and Kueue's, each in words of its own; the API server asks both at
	// once and reports the refusal that comes back first. Either way, the
	// finding at trainingRuntime says it once. A refusal of something else
	// is reported as it comes.
	refused := func(webhook, message string) func(*dynamicfake.FakeDynamicClient) {
		return func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor("create", "trainjobs", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
					Message: fmt.Sprintf("admission webhook %q denied the request: %s", webhook, message)}}
			})
		}
	}
	// As the simulated cluster's webhooks refuse it (Trainer v2.3.0, Kueue
	// v0.17.1), each alone.
	for webhook, message := range map[string]string{
		"validator.trainjob.trainer.kubeflow.org": `spec.RuntimeRef: Invalid value: {"name":"torch-distrib","apiGroup":"trainer.kubeflow.org","kind":"ClusterTrainingRuntime"}: ClusterTrainingRuntime.trainer.kubeflow.org "torch-distrib" not found: specified clusterTrainingRuntime must be created before the TrainJob is created`,
		"vtrainjob.kb.io":                         `runtime 'torch-distrib' not found`,
	} {
		require.Equal(t, []string{
			`settings.yaml:7:18: trainingRuntime: no ClusterTrainingRuntime "torch-distrib" on this cluster (those here: torch-distributed); did you mean "torch-distributed"? Otherwise create it first`,
		}, check(t, clustertest.Fake{Objects: clusterRuntime, React: refused(webhook, message)}, trainJob+"trainingRuntime: torch-distrib\n"), webhook)
	}
	require.Equal(t, []string{
		`settings.yaml:1:1: the API server refuses the TrainJob (a dry-run create): admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: spec.trainer.numNodes: Invalid value: 2: must be 1`,
	}, check(t, clustertest.Fake{Objects: clusterRuntime, React: refused("validator.trainjob.trainer.kubeflow.org", `spec.trainer.numNodes: Invalid value: 2: must be 1`)}, trainJob))
	// A refusal that names the runtime's name for another kind of object
	// is not the runtime's.
	require.Equal(t, []string{
		`settings.yaml:1:1: the API server refuses the TrainJob (a dry-run create): admission webhook "vtrainjob.kb.io" denied the request: secret 'torch-distrib' not found`,
		`settings.yaml:7:18: trainingRuntime: no ClusterTrainingRuntime "torch-distrib" on this cluster (those here: torch-distributed); did you mean "torch-distributed"? Otherwise create it first`,
	}, check(t, clustertest.Fake{Objects: clusterRuntime, React: refused("vtrainjob.kb.io", `secret 'torch-distrib' not found`)}, trainJob+"trainingRuntime: torch-distrib\n"))
	require.Equal(t, []string{
		`settings.yaml:4:16: numGpusPerPod: the job requests 64 nvidia.com/gpu in all (8 pods × 8), but ClusterQueue "cluster-queue" (behind LocalQueue "default-queue") can grant at most 32 (nominal 32, no borrowing): Kueue will never admit it; ask for less, or name a LocalQueue of a larger ClusterQueue`,
	}, check(t, clustertest.Fake{Objects: clusterRuntime}, strings.Replace(trainJob, "numPods: 2", "numPods: 8", 1)))
}

func TestCheckTopology(t *testing.T) {
	tas := `
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: racks, namespace: ml}
spec: {clusterQueue: racks}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: racks}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: racked
      resources: [{name: cpu, nominalQuota: 512}, {name: memory, nominalQuota: 4Ti}, {name: nvidia.com/gpu, nominalQuota: 32}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: racked}
spec: {nodeLabels: {type: gpu}, topologyName: dc}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: dc}
spec:
  levels: [{nodeLabel: example.com/block}, {nodeLabel: example.com/rack}]
`
	require.Empty(t, check(t, clustertest.Fake{Objects: tas}, helloworld+"queueName: racks\ntopology: {required: example.com/rack}\n"))
	require.Equal(t, []string{
		`settings.yaml:7:22: topology.required: Topology "dc" of ClusterQueue "racks" (behind LocalQueue "racks") has no level example.com/row (its levels: example.com/block, example.com/rack): Kueue cannot place the job; name one of its levels`,
	}, check(t, clustertest.Fake{Objects: tas}, helloworld+"queueName: racks\ntopology: {required: example.com/row}\n"))
	// cluster-queue's flavor, gpu, is not there: no Topology.
	require.Equal(t, []string{
		`settings.yaml:6:22: topology.required: no ResourceFlavor of ClusterQueue "cluster-queue" (behind LocalQueue "default-queue") names a Topology: Kueue admits a job that asks for one example.com/rack only to a flavor with a Topology, and the job would wait forever; name a LocalQueue whose ClusterQueue schedules by topology, or remove topology`,
	}, check(t, clustertest.Fake{}, helloworld+"topology: {required: example.com/rack}\n"))
	require.Equal(t, []string{
		`settings.yaml:6:23: topology.preferred: no ResourceFlavor of ClusterQueue "cluster-queue" (behind LocalQueue "default-queue") names a Topology: Kueue admits a job that asks for one example.com/rack only to a flavor with a Topology, and the job would wait forever; name a LocalQueue whose ClusterQueue schedules by topology, or remove topology`,
	}, check(t, clustertest.Fake{}, helloworld+"topology: {preferred: example.com/rack}\n"))
}

// A workspace needs the right to create ConfigMaps, and a queue of this
// cluster: MultiKueue copies the job to a worker, not its ConfigMaps.
func TestCheckAWorkspace(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte("print(1)\n"), 0o644))
	ws, err := workspace.Pack(dir)
	require.NoError(t, err)
	found, err := checkWith(t, fake(t, clustertest.Fake{}), helloworld, ws)
	require.NoError(t, err)
	require.Empty(t, found)

	noConfigMaps := fake(t, clustertest.Fake{React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
			review := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
			if resource, _, _ := unstructured.NestedString(review.Object, "spec", "resourceAttributes", "resource"); resource != "configmaps" {
				return false, nil, nil
			}
			review = review.DeepCopy()
			require.NoError(t, unstructured.SetNestedField(review.Object, false, "status", "allowed"))
			return true, review, nil
		})
	}})
	found, err = checkWith(t, noConfigMaps, helloworld+"namespace: ml\n", ws)
	require.NoError(t, err)
	require.Equal(t, []string{
		`settings.yaml:6:12: namespace: you may not create ConfigMaps in namespace "ml" (RBAC), which carry the workspace (--workspace); ask an administrator for the right, or ship the code in the image`,
	}, found)

	mk := manager(t, map[string]string{"worker1": activeWorker})
	mk.Workers = workersOf{"worker1": fake(t, clustertest.Fake{Objects: workerQueue + "\n---\n" + claim})}
	found, err = checkWith(t, mk, mkQueue, ws)
	require.NoError(t, err)
	require.Equal(t, []string{
		`settings.yaml:6:12: queueName: this queue sends the job to a MultiKueue worker cluster, and MultiKueue copies the job only, not the ConfigMaps of its workspace (--workspace); ship the code in the image or with setupCommands (git clone), or choose a queue of this cluster`,
	}, found)
}
