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
// ends after 2 s, or after the duration in its annotation
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
      values: [PyTorchJob]
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
// the AppWrapper and PyTorchJob integrations. %d %d %d %s: the health,
// metrics and webhook ports and the webhook's certificate folder.
const kueueConfig = `apiVersion: config.kueue.x-k8s.io/v1beta1
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

// simObjects are the cluster's fixed objects before the controllers start:
// their namespaces; MLBatch's PriorityClasses and Kueue
// WorkloadPriorityClasses of the same names; and the fake GPU nodes.
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
status:
  allocatable: &resources
    cpu: "128"
    memory: 2Ti
    pods: "110"
    nvidia.com/gpu: "%[2]d"
    nvidia.com/roce_gdr: "2"
    rdma/rdma_shared_device_a: "1"
  capacity: *resources
`, i, SimNodeGPUs)
	}
	return b.String()
}

// queues are the ResourceFlavor of the fake nodes and two ClusterQueues over
// it: cluster-queue with quota for all the nodes, and small-cq with
// SmallQueueGPUs GPUs, for the tests of queueing order.
func queues() string {
	var b strings.Builder
	b.WriteString(`apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: gpu-flavor
spec:
  nodeLabels:
    type: kwok
`)
	for _, q := range []struct {
		name string
		gpus int
	}{{"cluster-queue", SimNodes * SimNodeGPUs}, {"small-cq", SmallQueueGPUs}} {
		fmt.Fprintf(&b, `---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: %s
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu, nvidia.com/roce_gdr, rdma/rdma_shared_device_a]
    flavors:
    - name: gpu-flavor
      resources:
      - {name: cpu, nominalQuota: 2048}
      - {name: memory, nominalQuota: 32Ti}
      - {name: nvidia.com/gpu, nominalQuota: %d}
      - {name: nvidia.com/roce_gdr, nominalQuota: 32}
      - {name: rdma/rdma_shared_device_a, nominalQuota: 16}
`, q.name, q.gpus)
	}
	return b.String()
}
