package preflight

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// workersOf reaches each worker cluster named to its fake cluster, and no
// other.
type workersOf map[string]*cluster.Client

func (w workersOf) Reach(_ context.Context, _ *cluster.Client, name string) (*cluster.Client, cluster.Worker, error) {
	if c, ok := w[name]; ok {
		return c, cluster.Worker{Name: name, Context: name, Matched: "its name"}, nil
	}
	return nil, cluster.Worker{Name: name}, cluster.NoWorkerContext{Name: name}
}

// manager is a MultiKueue manager: its LocalQueue mk-queue in namespace ml
// is of ClusterQueue mk-cq, whose admission check mk MultiKueue runs, with
// the worker clusters given (name → its Active condition, "" for no
// MultiKueueCluster).
func manager(t *testing.T, workers map[string]string, objects ...string) *cluster.Client {
	names := slices.Sorted(maps.Keys(workers))
	for _, name := range names {
		if active := workers[name]; active != "" {
			objects = append(objects, fmt.Sprintf(`
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: %s}
spec: {kubeConfig: {location: %[1]s-kubeconfig}}
status: {conditions: [%s]}`, name, active))
		}
	}
	return fake(t, clustertest.Fake{Objects: strings.Join(append(objects, `
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: mk-queue, namespace: ml}
spec: {clusterQueue: mk-cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: mk-cq}
spec:
  admissionChecks: [mk]
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 512}
      - {name: memory, nominalQuota: 4Ti}
      - {name: nvidia.com/gpu, nominalQuota: 32}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: mk}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: mk-config}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueConfig
metadata: {name: mk-config}
spec: {clusters: [`+strings.Join(names, ", ")+`]}`), "\n---\n")})
}

const (
	activeWorker   = "{type: Active, status: 'True', reason: Active}"
	inactiveWorker = "{type: Active, status: 'False', reason: ClientConnectionFailed, message: 'dial tcp 10.0.0.3:6443: connection refused'}"
	// mkQueue is the helloworld job in the manager's queue; its claim is
	// one that only its pods need.
	mkQueue = helloworld + "queueName: mk-queue\nvolumes: [{name: data, claimName: data, mountPath: /data}]\n"
	claim   = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: ml}`
	// workerQueue is the LocalQueue mk-queue on a worker.
	workerQueue = `
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: mk-queue, namespace: ml}
spec: {clusterQueue: cluster-queue}`
)

func TestCheckOnAMultiKueueManager(t *testing.T) {
	for _, c := range []struct {
		name    string
		workers map[string]string
		reached workersOf
		want    []string
	}{{
		name:    "a worker that can run the job",
		workers: map[string]string{"worker1": activeWorker},
		reached: workersOf{"worker1": fake(t, clustertest.Fake{Objects: workerQueue + "\n---\n" + claim})},
	}, {
		name:    "the only worker lacks the queue and the claim",
		workers: map[string]string{"worker1": activeWorker},
		reached: workersOf{"worker1": fake(t, clustertest.Fake{})},
		want: []string{
			`settings.yaml:6:12: queueName: on worker cluster worker1: no LocalQueue "mk-queue" in namespace "ml", and the job would wait for it forever (those here: default-queue, research); name one that exists, or ask an administrator for one`,
			`settings.yaml:7:35: volumes[0].claimName: on worker cluster worker1: no PersistentVolumeClaim "data" in namespace "ml" (there are none); create it first, or name one that exists`,
		},
	}, {
		name:    "one worker inactive, one not reached, one that could never run it",
		workers: map[string]string{"worker1": activeWorker, "worker2": inactiveWorker, "worker3": activeWorker},
		reached: workersOf{"worker1": fake(t, clustertest.Fake{Objects: claim})},
		want: []string{
			`settings.yaml:6:12: could not check: queueName: no context of your kubeconfig reaches worker cluster worker3: add a context named worker3, or pass --worker worker3=CONTEXT`,
			`settings.yaml:6:12: warning: queueName: worker cluster worker1 could never run the job: no LocalQueue "mk-queue" in namespace "ml", and the job would wait for it forever (those here: default-queue, research); name one that exists, or ask an administrator for one`,
			`settings.yaml:6:12: warning: queueName: worker cluster worker2 (ClientConnectionFailed: dial tcp 10.0.0.3:6443: connection refused) of MultiKueue admission check "mk" is not Active: MultiKueue dispatches jobs only to worker1, worker3`,
		},
	}, {
		name:    "no worker active",
		workers: map[string]string{"worker2": inactiveWorker, "worker4": ""},
		want: []string{
			`settings.yaml:6:12: queueName: no worker cluster of MultiKueue admission check "mk" is Active (worker2 (ClientConnectionFailed: dial tcp 10.0.0.3:6443: connection refused); worker4 (it has no MultiKueueCluster)): MultiKueue dispatches the job to none, and it would wait until one is; ask an administrator`,
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			client := manager(t, c.workers)
			client.Workers = c.reached
			found, err := checkWith(t, client, mkQueue, nil)
			require.NoError(t, err)
			require.Equal(t, c.want, found)
		})
	}
}
