//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/testdata/harness/e2e"
)

// The bench's own part of the simulated cluster: nodes enough for the
// largest job (scaleNodes of scaleNodeGPUs GPUs, eight pods of eight GPUs
// each), a ResourceFlavor of them and a ClusterQueue with their GPUs,
// whose LocalQueue scale-queue runs the jobs in e2e.SimScaleNamespace,
// where kwok serves the pods' logs; heldQueue, a LocalQueue of the same
// ClusterQueue that Kueue holds (stopPolicy: Hold), where the submits
// measured on their own stay queued; and held-cq, a ClusterQueue without
// quota, where the jobs of the namespaces of many jobs wait (created
// without a check, which would refuse them).
const (
	scaleNodes    = 128
	scaleNodeGPUs = 64
	scaleQueue    = "scale-queue"
	heldQueue     = "held-queue"
	heldNamespace = "scale-held"
)

func scaleObjects() string {
	var b strings.Builder
	for i := range scaleNodes {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: scale-node-%[1]d
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok-scale
    kubernetes.io/hostname: scale-node-%[1]d
status:
  allocatable: &resources
    cpu: "1024"
    memory: 16Ti
    pods: "110"
    nvidia.com/gpu: "%[2]d"
  capacity: *resources
`, i, scaleNodeGPUs)
	}
	b.WriteString(`---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: scale-flavor}
spec: {nodeLabels: {type: kwok-scale}}
`)
	b.WriteString(clusterQueue("scale-cq", fmt.Sprint(scaleNodes*1024), "4096Ti", fmt.Sprint(scaleNodes*scaleNodeGPUs)))
	b.WriteString(clusterQueue("held-cq", "0", "0", "0"))
	b.WriteString(namespace(e2e.SimScaleNamespace, scaleQueue, "scale-cq", ""))
	b.WriteString(namespace(heldNamespace, heldQueue, "scale-cq", "Hold"))
	return b.String()
}

// clusterQueue is a ClusterQueue of the scale nodes' flavor, with its
// quotas of cpu, memory and GPUs.
func clusterQueue(name, cpu, memory, gpus string) string {
	return fmt.Sprintf(`---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: %s}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: scale-flavor
      resources:
      - {name: cpu, nominalQuota: "%s"}
      - {name: memory, nominalQuota: "%s"}
      - {name: nvidia.com/gpu, nominalQuota: "%s"}
`, name, cpu, memory, gpus)
}

// namespace is a namespace with a LocalQueue of a ClusterQueue, and its
// stopPolicy ("" for none).
func namespace(name, queue, clusterQueue, stop string) string {
	spec := "clusterQueue: " + clusterQueue
	if stop != "" {
		spec += ", stopPolicy: " + stop
	}
	return fmt.Sprintf(`---
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: %[2]s, namespace: %[1]s}
spec: {%[3]s}
`, name, queue, spec)
}

// settings are the settings of a bench job of a kind and a number of pods:
// eight GPUs a pod, the setup and program of the helloworld example, and
// pods that kwok keeps running for an hour.
func settings(kind, name, namespace, queue string, pods int) string {
	return fmt.Sprintf(`jobKind: %s
jobName: %s
namespace: %s
queueName: %s
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
numPods: %d
numCpusPerPod: 32
numGpusPerPod: 8
totalMemoryPerPod: 256Gi
setupCommands:
- git clone https://github.com/dbarnett/python-helloworld
- cd python-helloworld
mainProgram: helloworld.py
podAnnotations:
  sim.torchwrap.dev/run-for: 1h
`, kind, name, namespace, queue, pods)
}

// createJobs makes n queued jobs (AppWrappers of the helloworld example's
// shape) in a namespace, rendered by the generator in one process (render
// --out-dir) and created eight at a time with the API server's own
// client: a namespace of thousands of jobs in minutes.
func (b *bench) createJobs(ctx context.Context, ns string, n int) error {
	if _, err := b.cluster.Kubectl([]byte(namespace(ns, heldQueue, "held-cq", "")), "create", "-f", "-"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(b.tmp, "jobs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var files []string
	for i := range n {
		file := filepath.Join(dir, "in", fmt.Sprintf("job-%05d.yaml", i))
		if i == 0 {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(file, []byte(settings("PyTorchJob", fmt.Sprintf("job-%05d", i), ns, heldQueue, 4)), 0o644); err != nil {
			return err
		}
		files = append(files, file)
	}
	out := filepath.Join(dir, "out")
	if _, err := b.runner.run(b.generator, append([]string{"render", "--out-dir", out}, files...), how{}); err != nil {
		return err
	}
	config, err := clientcmd.BuildConfigFromFlags("", b.cluster.Kubeconfig)
	if err != nil {
		return err
	}
	config.QPS, config.Burst = -1, 0
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return err
	}
	appWrappers := schema.GroupVersionResource{Group: "workload.codeflare.dev", Version: "v1beta2", Resource: "appwrappers"}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				data, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("job-%05d.yaml", i)))
				if err != nil {
					errs <- err
					return
				}
				obj := &unstructured.Unstructured{}
				if err := sigsyaml.Unmarshal(data, &obj.Object); err != nil {
					errs <- err
					return
				}
				if _, err := client.Resource(appWrappers).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating job %d in %s: %w", i, ns, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
