//go:build linux

package e2e

import (
	"fmt"
	"strings"
)

// The configuration files and fixed objects of the simulated cluster.

// schedulerConfig: kube-scheduler with the volume plugins off. The fake nodes
// have no storage, and no volume provisioner runs: with the plugins on, a pod
// with a PersistentVolumeClaim (or an ephemeral volume) would never be bound.
// %s: the kubeconfig.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled:
      - name: VolumeBinding
      - name: VolumeRestrictions
      - name: VolumeZone
      - name: NodeVolumeLimits
`

// kwokStages move the pods on the fake nodes: a bound pod starts at once
// (its init containers done, its containers running); a pod of a PyTorchJob
// or of a Job (those of a JobSet, which a TrainJob makes too) ends after 2 s, or after the duration in its annotation
// sim.torchwrap.dev/run-for, with exit code 0 (Succeeded), or with the exit
// code in its annotation sim.torchwrap.dev/exit-code (Failed); a deleted pod
// goes at once.
const kwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-start
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.podIP
      operator: DoesNotExist
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      startTime: {{ $now | Quote }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      conditions:
      - type: Initialized
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-finish
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Running]
    - key: .metadata.ownerReferences.[].kind
      operator: In
      values: [PyTorchJob, Job]
  delay:
    durationMilliseconds: 2000
    durationFrom:
      expressionFrom: '.metadata.annotations["sim.torchwrap.dev/run-for"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $code := "0" }}
      {{ with .metadata.annotations }}{{ with index . "sim.torchwrap.dev/exit-code" }}{{ $code = . }}{{ end }}{{ end }}
      phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
      conditions:
      - type: ContainersReady
        status: "False"
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "False"
        lastTransitionTime: {{ $now | Quote }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: {{ $code }}
            reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: Exists
  next:
    finalizers:
      empty: true
    delete: true
`

// kueueConfig: Kueue on loopback, without leader election or its own
// certificate management (which expects a kubelet to mount its Secret), with
// the AppWrapper, PyTorchJob, JobSet and TrainJob integrations (and
// topology-aware scheduling, on by default) and its visibility API (the
// pending workloads of a queue, with their positions), which the API server
// reaches through visibilityAPI. %d %d %d %s %d: the health, metrics and
// webhook ports, the webhook's certificate folder and the visibility API's
// port.
const kueueConfig = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - workload.codeflare.dev/appwrapper
  - kubeflow.org/pytorchjob
  - jobset.x-k8s.io/jobset
  - trainer.kubeflow.org/trainjob
visibilityServer:
  bindAddress: 127.0.0.1
  bindPort: %d
`

// visibilityAPI registers Kueue's visibility API with the API server, which
// passes its requests on to Kueue on loopback (an ExternalName Service of
// localhost is how an aggregated API's address can be a loopback one;
// Endpoints cannot hold one) with the front proxy's client certificate
// (frontProxy). Kueue's serving certificate is the simulated cluster's own,
// not checked. %d: the visibility API's port.
const visibilityAPI = `apiVersion: v1
kind: Service
metadata: {name: visibility-server, namespace: kueue-system}
spec:
  type: ExternalName
  externalName: localhost
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.visibility.kueue.x-k8s.io}
spec:
  group: visibility.kueue.x-k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: visibility-server, namespace: kueue-system, port: %[1]d}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta2.visibility.kueue.x-k8s.io}
spec:
  group: visibility.kueue.x-k8s.io
  version: v1beta2
  groupPriorityMinimum: 100
  versionPriority: 200
  insecureSkipTLSVerify: true
  service: {name: visibility-server, namespace: kueue-system, port: %[1]d}
`

// jobSetConfig: the JobSet controller on loopback, without leader election
// or its own certificate management, without metrics. %d %d %s: the health
// and webhook ports and the webhook's certificate folder.
const jobSetConfig = `apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
`

// trainerConfig: the Trainer controller on loopback, without leader
// election or its own certificate management, without metrics; its webhook
// server reads its certificate from a fixed folder (see StartSim). %d %d:
// the health and webhook ports.
const trainerConfig = `apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
leaderElection:
  leaderElect: false
certManagement:
  enable: false
`

// torchDistributed is the ClusterTrainingRuntime that a TrainJob names by
// default, as Trainer ships it: the torch ML policy (whence the PET_
// variables of torchrun), one node, and one replicated job named node,
// marked as the trainer's step, whose container node the TrainJob's trainer
// fills in.
const torchDistributed = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torch-distributed
  labels: {trainer.kubeflow.org/framework: torch}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              spec:
                containers:
                - {name: node, image: pytorch/pytorch}
`

// appWrapperConfig is the AppWrapper controller's configuration, which it
// reads from this ConfigMap, with its webhooks on. %d: the health port.
const appWrapperConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: appwrapper-operator-config
  namespace: appwrapper-system
data:
  config.yaml: |
    controllerManager:
      health:
        bindAddress: 127.0.0.1:%d
      metrics:
        bindAddress: "0"
      leaderElection: false
    webhooksEnabled: true
`

// certSecret is the Secret a certificate rotator (the AppWrapper
// controller's, the training operator's) reads its webhook certificate from:
// the CA and the serving certificate are one. %[1]s %[2]s: the Secret's
// namespace and name; %[3]s %[4]s: the certificate and key, in base64.
const certSecret = `apiVersion: v1
kind: Secret
metadata:
  namespace: %[1]s
  name: %[2]s
data:
  ca.crt: %[3]s
  ca.key: %[4]s
  tls.crt: %[3]s
  tls.key: %[4]s
`

// The node labels of the topology of the fake nodes, from the widest domain
// to the narrowest: SimNodes nodes in SimBlocks blocks of SimRacksPerBlock
// racks each (kubernetes.io/hostname, each node's own, is the last level).
const (
	BlockLabel       = "cloud.provider.com/topology-block"
	RackLabel        = "cloud.provider.com/topology-rack"
	SimBlocks        = 2
	SimRacksPerBlock = 2
	// SimRackNodes is the number of nodes in a rack.
	SimRackNodes = SimNodes / (SimBlocks * SimRacksPerBlock)
)

// SideRack is the last rack of the fake nodes (its last node is
// gpu-node-15), where the scenarios that run beside the topology scenarios
// put their pods: those need a whole rack free, with the GPUs of all its
// nodes.
var SideRack = fmt.Sprintf("rack-%d", SimBlocks*SimRacksPerBlock-1)

// simObjects are the cluster's fixed objects before the controllers start:
// their namespaces; the priorityClasses; and the fake GPU nodes, in blocks
// and racks.
func simObjects() string {
	var b strings.Builder
	b.WriteString(`apiVersion: v1
kind: Namespace
metadata:
  name: kueue-system
---
apiVersion: v1
kind: Namespace
metadata:
  name: appwrapper-system
---
apiVersion: v1
kind: Namespace
metadata:
  name: kubeflow
`)
	b.WriteString(priorityClasses())
	for i := range SimNodes {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-%[1]d
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: gpu-node-%[1]d
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
    %[3]s: block-%[5]d
    %[4]s: rack-%[6]d
status:
  allocatable: &resources
    cpu: "128"
    memory: 2Ti
    pods: "110"
    nvidia.com/gpu: "%[2]d"
    nvidia.com/roce_gdr: "2"
    rdma/rdma_shared_device_a: "1"
  capacity: *resources
`, i, SimNodeGPUs, BlockLabel, RackLabel, i/(SimRackNodes*SimRacksPerBlock), i/SimRackNodes)
	}
	for i := range ProcessNodes {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  labels:
    type: process
    kubernetes.io/hostname: %[1]s
spec:
  taints:
  - {key: %[2]s, value: "true", effect: NoSchedule}
status:
  allocatable: &resources
    cpu: "32"
    memory: 256Gi
    pods: "110"
    nvidia.com/gpu: "%[3]d"
    nvidia.com/roce_gdr: "2"
  capacity: *resources
`, processNodeName(i), processTaint, SimNodeGPUs)
	}
	return b.String()
}

// priorityClasses are MLBatch's PriorityClasses and Kueue
// WorkloadPriorityClasses of the same names, each after "---", which a
// cluster where the jobs go needs: Kueue makes no Workload for a job whose
// PriorityClass does not exist.
func priorityClasses() string {
	var b strings.Builder
	for _, p := range []struct {
		name  string
		value int
	}{{"low-priority", 10}, {"default-priority", 50}, {"high-priority", 100}} {
		fmt.Fprintf(&b, `---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: %[1]s
value: %[2]d
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata:
  name: %[1]s
value: %[2]d
`, p.name, p.value)
	}
	return b.String()
}

// ProcessNodes is the number of process nodes: nodes whose pods run for
// real, as processes of this machine (processnodes.go), each with
// SimNodeGPUs GPUs and 2 RoCE GDR devices that are only counted (the
// scenario profile's jobs ask for them). They are labelled type: process
// and tainted processTaint, so that only jobs of ProcessQueue (whose
// ResourceFlavor selects them and tolerates the taint) go there.
const ProcessNodes = 2

// processTaint keeps what is not meant to run for real off the process
// nodes.
const processTaint = "sim.torchwrap.dev/process-node"

// ProcessQueue is the LocalQueue (of ClusterQueue process-cq) of the jobs
// that run on the process nodes; namespace default has one.
const ProcessQueue = "process-queue"

// ProcessClusterQueue is the ClusterQueue of the process nodes.
const ProcessClusterQueue = "process-cq"

func processNodeName(i int) string { return fmt.Sprintf("process-node-%d", i) }

// processNodeNames are the names of the process nodes.
func processNodeNames() []string {
	var names []string
	for i := range ProcessNodes {
		names = append(names, processNodeName(i))
	}
	return names
}

// ProgramsClaim is the PersistentVolumeClaim that holds the process nodes'
// programs (testdata/sim): Cluster.ProgramsClaim makes it in a namespace.
const ProgramsClaim = "sim-programs"

// programsClaim is ProgramsClaim in a namespace, bound to a hostPath
// PersistentVolume of its own (a claim binds one volume) at the folder
// programs.
func programsClaim(namespace, programs string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s-%[2]s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadOnlyMany]
  hostPath: {path: %[3]q}
  claimRef: {namespace: %[2]s, name: %[1]s}
  storageClassName: ""
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  accessModes: [ReadOnlyMany]
  resources: {requests: {storage: 1Gi}}
  volumeName: %[1]s-%[2]s
  storageClassName: ""
`, ProgramsClaim, namespace, programs)
}

// clusterQueue is a ClusterQueue of the simulated cluster: its
// ResourceFlavor, its GPU quota, and whether it has quota for the RDMA
// devices of the nodes too (cpu and memory it has for all the nodes); and
// its cohort, in which it preempts as MLBatch's ClusterQueues do, and
// whether it may borrow GPUs there.
type clusterQueue struct {
	name, flavor string
	gpus         int
	rdma         bool
	cohort       string
	noBorrowing  bool
}

// clusterQueues: cluster-queue with quota for all the fake nodes; small-cq with
// SmallQueueGPUs GPUs, for the tests of queueing order; tiny-cq with
// TinyQueueGPUs GPUs and no RDMA devices, for the checks of a job against its
// queue's quota; TopologyClusterQueue, with quota for all the nodes in the
// flavor that knows their topology, for the tests of topology-aware
// scheduling; ProcessClusterQueue, with quota for the GPUs and RDMA devices
// of the process nodes, and SmallProcessClusterQueue, with room for one job
// there. None of them is in a cohort, so none borrows. TeamAClusterQueue and
// TeamBClusterQueue, of one node's GPUs each, are in a cohort, as MLBatch
// sets up a cluster's teams: a job preempts those of lower priority in its
// ClusterQueue, and a team takes back the quota another borrowed from it;
// team A never borrows, so that a job of its own must preempt.
var clusterQueues = []clusterQueue{
	{name: "cluster-queue", flavor: "gpu-flavor", gpus: SimNodes * SimNodeGPUs, rdma: true},
	{name: "small-cq", flavor: "gpu-flavor", gpus: SmallQueueGPUs, rdma: true},
	{name: "tiny-cq", flavor: "gpu-flavor", gpus: TinyQueueGPUs},
	{name: TopologyClusterQueue, flavor: "topology-flavor", gpus: SimNodes * SimNodeGPUs, rdma: true},
	{name: ProcessClusterQueue, flavor: "process-flavor", gpus: ProcessNodes * SimNodeGPUs, rdma: true},
	{name: SmallProcessClusterQueue, flavor: "process-flavor", gpus: SmallProcessGPUs},
	{name: TeamAClusterQueue, flavor: "gpu-flavor", gpus: SimNodeGPUs, cohort: TeamsCohort, noBorrowing: true},
	{name: TeamBClusterQueue, flavor: "gpu-flavor", gpus: SimNodeGPUs, cohort: TeamsCohort},
	{name: RolesClusterQueue, flavor: "gpu-flavor", gpus: SimNodeGPUs},
}

// RolesClusterQueue is the ClusterQueue of the jobs of the users of the
// roles scenario, and theirs alone, so that what their jobs hold of it is
// theirs: one node's GPUs.
const RolesClusterQueue = "roles-cq"

// The ClusterQueues of two teams, in one cohort, and the cohort.
const (
	TeamAClusterQueue = "team-a-cq"
	TeamBClusterQueue = "team-b-cq"
	TeamsCohort       = "teams"
)

// SmallProcessClusterQueue is a ClusterQueue of the process nodes with
// SmallProcessGPUs GPUs: room for one job of testdata/sim/allreduce.settings.yaml
// (2 pods of 2 GPUs), so that a second one waits.
const (
	SmallProcessClusterQueue = "process-small-cq"
	SmallProcessGPUs         = 4
)

// TopologyClusterQueue is the ClusterQueue whose flavor, topology-flavor,
// names the Topology of the fake nodes (levels BlockLabel, RackLabel,
// kubernetes.io/hostname): Kueue places the pods of a job it admits there
// in the domain that the job's pod templates ask for.
const TopologyClusterQueue = "topology-cq"

// quota is the nominal quota of a resource in a ClusterQueue.
type quota struct{ resource, nominal string }

// queues are the ResourceFlavors of the fake nodes (gpu-flavor, and
// topology-flavor, which names their Topology), that Topology, the
// ResourceFlavor of the process nodes (process-flavor), and the
// clusterQueues over them.
func queues() string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: gpu-flavor
spec:
  nodeLabels:
    type: kwok
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata:
  name: gpu-topology
spec:
  levels:
  - nodeLabel: %s
  - nodeLabel: %s
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: topology-flavor
spec:
  nodeLabels:
    type: kwok
  topologyName: gpu-topology
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: process-flavor
spec:
  nodeLabels:
    type: process
  tolerations:
  - {key: %s, operator: Exists, effect: NoSchedule}
`, BlockLabel, RackLabel, processTaint)
	for _, q := range clusterQueues {
		quotas := []quota{{"cpu", "2048"}, {"memory", "32Ti"}, {"nvidia.com/gpu", fmt.Sprint(q.gpus)}}
		if q.rdma {
			quotas = append(quotas, quota{"nvidia.com/roce_gdr", "32"}, quota{"rdma/rdma_shared_device_a", "16"})
		}
		var covered, resources []string
		for _, r := range quotas {
			covered = append(covered, r.resource)
			limit := ""
			if q.noBorrowing && r.resource == "nvidia.com/gpu" {
				limit = ", borrowingLimit: 0"
			}
			resources = append(resources, fmt.Sprintf("      - {name: %s, nominalQuota: %s%s}\n", r.resource, r.nominal, limit))
		}
		cohort := ""
		if q.cohort != "" {
			// MLBatch's preemption policy.
			cohort = fmt.Sprintf(`  cohort: %s
  preemption:
    withinClusterQueue: LowerOrNewerEqualPriority
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: Never}
`, q.cohort)
		}
		fmt.Fprintf(&b, `---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: %s
spec:
  namespaceSelector: {}
%s  resourceGroups:
  - coveredResources: [%s]
    flavors:
    - name: %s
      resources:
%s`, q.name, cohort, strings.Join(covered, ", "), q.flavor, strings.Join(resources, ""))
	}
	return b.String()
}

// nadCRD is the CRD of Multus' NetworkAttachmentDefinition, cut down to what
// the generator's checks read (a NAD's existence) and what a NAD holds: its
// CNI configuration, a JSON string. Multus itself does not run here.
const nadCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: network-attachment-definitions.k8s.cni.cncf.io
spec:
  group: k8s.cni.cncf.io
  scope: Namespaced
  names:
    kind: NetworkAttachmentDefinition
    listKind: NetworkAttachmentDefinitionList
    plural: network-attachment-definitions
    singular: network-attachment-definition
    shortNames: [net-attach-def]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              config: {type: string}
`

// kueuePyTorchJobLabel, "off" on a namespace, keeps Kueue's PyTorchJob
// webhook out of it (see webhooks).
const kueuePyTorchJobLabel = "sim.torchwrap.dev/kueue-pytorchjob"

// userObjects are what the jobs of the tests find in the namespaces they go
// to, as users and administrators of a cluster would have made them, so that
// every example and starter can be submitted and generator check finds
// nothing missing. Made after Kueue serves its webhooks (the LocalQueues).
//
// What each example needs (in namespace default, unless it names one; the
// PriorityClasses and WorkloadPriorityClasses low-, default- and
// high-priority are simObjects'):
//
//   - every starter, and every example without namespace: LocalQueue
//     default-queue;
//   - the settings of testdata/sim: LocalQueue ProcessQueue and the claim
//     ProgramsClaim (see StartSim);
//   - deepspeedjob: PVC dschat;
//   - trainjob: PVC my-data-pvc;
//   - kueue-pytorchjob-without-appwrapper: namespace team-vision, LocalQueue
//     team-vision-queue;
//   - multi-node-gdr: namespace team-llm, LocalQueue team-llm-queue, PVC
//     llm-checkpoints, Secret huggingface (key token), ConfigMaps
//     nvidia-topo-gdr (key virtualTopology.xml) and nccl-netwk-env-vars
//     (envFrom: any key), NetworkAttachmentDefinition
//     multi-nic-cni-operator-ipvlanl3;
//   - nvme-scratch: PVC imagenet-dataset, StorageClass odf-lvm-vg1;
//   - private-git-clone: Secrets my-git-deploy-key (key id_rsa) and wandb
//     (key api-key), ConfigMaps my-git-known-hosts (key known_hosts) and
//     training-settings (key wandb-project);
//   - pytorchjob-elastic: PVCs shared-datasets and llama-checkpoints;
//   - pytorchtrainingjob-debug: PVC tutorial;
//   - pytorchtrainingjob-elastic: StorageClass odf-lvm-vg1;
//   - pytorchtrainingjob-torchrun: PVC tutorial (a volume, and TensorBoard's
//     logs).
//
// The namespaces of the tests of the commands that ask the cluster:
// SimCheckNamespace, with LocalQueues default-queue and tiny-queue (of
// tiny-cq), Secret check-secret (key token) and ConfigMap check-config (key
// setting), and nothing else, so that a settings file there can name what is
// missing; SimUnmanagedNamespace, labelled so that Kueue's PyTorchJob
// webhook leaves it out, with LocalQueue default-queue; SimRBACNamespace, with
// LocalQueue default-queue, where Researcher is bound to ClusterRole view.
//
// No volume provisioner runs: the PVCs stay Pending, which the scheduler here
// does not mind (see schedulerConfig).
func userObjects() string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Namespace
metadata: {name: team-vision}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-llm}
---
apiVersion: v1
kind: Namespace
metadata: {name: %s}
---
apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels: {%s: "off"}
---
apiVersion: v1
kind: Namespace
metadata: {name: %s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: researcher-view, namespace: %s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: odf-lvm-vg1}
provisioner: sim.torchwrap.dev/none
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: multi-nic-cni-operator-ipvlanl3, namespace: team-llm}
spec:
  config: '{"cniVersion": "0.3.1", "type": "ipvlan", "mode": "l3"}'
`, SimCheckNamespace, SimUnmanagedNamespace, kueuePyTorchJobLabel, SimRBACNamespace, SimRBACNamespace, Researcher)
	for _, q := range []struct{ namespace, name, clusterQueue string }{
		{"default", "default-queue", "cluster-queue"},
		{"default", ProcessQueue, ProcessClusterQueue},
		{"team-vision", "team-vision-queue", "cluster-queue"},
		{"team-llm", "team-llm-queue", "cluster-queue"},
		{SimCheckNamespace, "default-queue", "cluster-queue"},
		{SimCheckNamespace, "tiny-queue", "tiny-cq"},
		{SimUnmanagedNamespace, "default-queue", "cluster-queue"},
		{SimRBACNamespace, "default-queue", "cluster-queue"},
	} {
		fmt.Fprintf(&b, `---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: %s, namespace: %s}
spec: {clusterQueue: %s}
`, q.name, q.namespace, q.clusterQueue)
	}
	for _, pvc := range []struct{ namespace, name string }{
		{"default", "dschat"}, {"default", "imagenet-dataset"}, {"default", "shared-datasets"},
		{"default", "llama-checkpoints"}, {"default", "tutorial"}, {"default", "my-data-pvc"}, {"team-llm", "llm-checkpoints"},
	} {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %s, namespace: %s}
spec:
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 100Gi}}
`, pvc.name, pvc.namespace)
	}
	// Secrets and ConfigMaps, each with one key (a value that only
	// stands for the real one).
	for _, o := range []struct{ kind, namespace, name, key string }{
		{"Secret", "default", "my-git-deploy-key", "id_rsa"},
		{"Secret", "default", "wandb", "api-key"},
		{"ConfigMap", "default", "my-git-known-hosts", "known_hosts"},
		{"ConfigMap", "default", "training-settings", "wandb-project"},
		{"Secret", "team-llm", "huggingface", "token"},
		{"ConfigMap", "team-llm", "nvidia-topo-gdr", "virtualTopology.xml"},
		{"ConfigMap", "team-llm", "nccl-netwk-env-vars", "NCCL_IB_HCA"},
		{"Secret", SimCheckNamespace, "check-secret", "token"},
		{"ConfigMap", SimCheckNamespace, "check-config", "setting"},
	} {
		data := "data"
		if o.kind == "Secret" {
			data = "stringData"
		}
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: %s
metadata: {name: %s, namespace: %s}
%s: {%s: sim}
`, o.kind, o.name, o.namespace, data, o.key)
	}
	return b.String()
}

// multiKueueConfig is what the MultiKueue manager's Kueue has in its
// configuration after kueueConfig (the same integrations as the simulated
// cluster's, for which MultiKueue has adapters): garbage collection of the
// objects on the workers whose Workload on the manager is gone every 5 s (1
// min by default), and a Workload admitted on a worker that the manager
// cannot reach kept admitted for 1 min (15 by default) before it is
// dispatched again.
const multiKueueConfig = `multiKueue:
  gcInterval: 5s
  workerLostTimeout: 1m
`

// kubeconfigSecret is a Secret in kueue-system with a kubeconfig under the
// key MultiKueue reads, kubeconfig. %s %s: its name and the kubeconfig, in
// base64.
const kubeconfigSecret = `apiVersion: v1
kind: Secret
metadata: {name: %s, namespace: kueue-system}
data:
  kubeconfig: %s
`

// managerQueues are the MultiKueue objects of the manager, made once its
// Kueue serves its webhooks: a MultiKueueCluster for each of
// MultiKueueWorker and MultiKueueDeadWorker, whose kubeconfigs the Secrets
// <name>-kubeconfig hold, MultiKueueConfig and AdmissionCheck
// MultiKueueCheck over both, and ClusterQueue MultiKueueClusterQueue, with
// that check and quota for cpu, memory, pods and all the worker's GPUs, over
// ResourceFlavor multikueue-flavor, which has no node labels or
// tolerations: the manager's Kueue puts its flavor's into its own copy of a
// job when it admits it (no pod runs from that copy), and those of the
// worker's flavors (process-flavor's node label and toleration of the
// process nodes' taint) are the worker's Kueue's to put in the copy that it
// admits there. LocalQueue MultiKueueQueue in namespaces default and
// MultiKueueNamespace.
func managerQueues() string {
	var b strings.Builder
	for _, worker := range []string{MultiKueueWorker, MultiKueueDeadWorker} {
		fmt.Fprintf(&b, `apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: %[1]s}
spec:
  clusterSource:
    kubeConfig: {locationType: Secret, location: %[1]s-kubeconfig}
---
`, worker)
	}
	fmt.Fprintf(&b, `apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: %[1]s}
spec:
  clusters: [%[2]s, %[3]s]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: %[1]s}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: %[1]s}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: multikueue-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: %[4]s}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks:
    - name: %[1]s
  resourceGroups:
  - coveredResources: [cpu, memory, pods, nvidia.com/gpu]
    flavors:
    - name: multikueue-flavor
      resources:
      - {name: cpu, nominalQuota: 2048}
      - {name: memory, nominalQuota: 32Ti}
      - {name: pods, nominalQuota: 1000}
      - {name: nvidia.com/gpu, nominalQuota: %[5]d}
`, MultiKueueCheck, MultiKueueWorker, MultiKueueDeadWorker, MultiKueueClusterQueue, (SimNodes+ProcessNodes)*SimNodeGPUs)
	for _, namespace := range []string{"default", MultiKueueNamespace} {
		fmt.Fprintf(&b, `---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: %s, namespace: %s}
spec: {clusterQueue: %s}
`, MultiKueueQueue, namespace, MultiKueueClusterQueue)
	}
	return b.String()
}

// workerQueues are what the worker has for the MultiKueue manager's jobs:
// LocalQueue MultiKueueQueue in namespace default, of ProcessClusterQueue,
// where the copies of the manager's jobs go (a copy's Workload names the
// LocalQueue of its job on the manager), so that their pods run on the
// process nodes; and namespace MultiKueueNamespace without it: a job
// queued there on the manager stays pending (its Workload's MultiKueue
// check Pending), since the copy of its Workload on the worker is
// inadmissible ("LocalQueue multikueue-queue doesn't exist").
func workerQueues() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %s}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: %s, namespace: default}
spec: {clusterQueue: %s}
`, MultiKueueNamespace, MultiKueueQueue, ProcessClusterQueue)
}
