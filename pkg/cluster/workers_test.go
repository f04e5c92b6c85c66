package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// dispatched is the status of the AppWrapper demo's Workload on a
// MultiKueue manager that dispatched it to worker1.
const dispatched = `{admission: {clusterQueue: multikueue-cq}, clusterName: worker1, conditions: [{type: QuotaReserved, status: 'True', reason: QuotaReserved},
  {type: Admitted, status: 'True', reason: Admitted}]}`

// mkCluster is the MultiKueueCluster worker1 on the manager, whose
// kubeconfig Secret gives its server, https://10.0.0.2:6443.
func mkCluster() []string {
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: w, cluster: {server: "https://10.0.0.2:6443"}}]
users: [{name: kueue, user: {token: secret}}]
contexts: [{name: w, context: {cluster: w, user: kueue}}]
current-context: w
`
	return []string{`
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: worker1}
spec: {kubeConfig: {location: worker1-kubeconfig, locationType: Secret}}`, fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: worker1-kubeconfig, namespace: kueue-system}
data: {kubeconfig: %s}`, base64.StdEncoding.EncodeToString([]byte(kubeconfig)))}
}

// reaching gives the manager a kubeconfig of the contexts (name → server)
// and dials the worker for a context of its server, https://10.0.0.2:6443;
// another context names a cluster that does not answer.
func reaching(manager, worker *Client, contexts map[string]string, mapping map[string]string, configFile string) {
	config := clientcmdapi.Config{Contexts: map[string]*clientcmdapi.Context{}, Clusters: map[string]*clientcmdapi.Cluster{}}
	for name, server := range contexts {
		config.Contexts[name] = &clientcmdapi.Context{Cluster: name + "-cluster"}
		config.Clusters[name+"-cluster"] = &clientcmdapi.Cluster{Server: server}
	}
	manager.Workers = &kubeconfigWorkers{mapping: mapping, configFile: configFile,
		kubeconfig: func() (clientcmdapi.Config, error) { return config, nil },
		dial: func(context string) (*Client, error) {
			if sameServer(config.Clusters[context+"-cluster"].Server, "https://10.0.0.2:6443") {
				return worker, nil
			}
			return nil, Unreachable{Err: fmt.Errorf("cannot reach the cluster of context %s", context)}
		}}
}

func TestWorkerReached(t *testing.T) {
	configDir := t.TempDir()
	mapped := filepath.Join(configDir, "mapped.yaml")
	require.NoError(t, os.WriteFile(mapped, []byte("workers:\n  worker1: east\n"), 0o600))
	broken := filepath.Join(configDir, "broken.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("worker:\n  worker1: east\n"), 0o600))
	worker := cluster(t, nil)
	for _, c := range []struct {
		name       string
		contexts   map[string]string
		mapping    map[string]string
		configFile string
		secret     bool
		context    string
		matched    string
		err        string
	}{
		{name: "a context of its name", contexts: map[string]string{"worker1": "https://10.0.0.2:6443", "manager": "https://10.0.0.1:6443"},
			context: "worker1", matched: "its name"},
		{name: "the flag first", contexts: map[string]string{"worker1": "https://10.0.0.9", "east": "https://10.0.0.2:6443"},
			mapping: map[string]string{"worker1": "east"}, configFile: broken, context: "east", matched: "--worker"},
		{name: "the config file before a context's name", contexts: map[string]string{"worker1": "https://10.0.0.9", "east": "https://10.0.0.2:6443"},
			configFile: mapped, context: "east", matched: mapped},
		{name: "its server, from its kubeconfig Secret", contexts: map[string]string{"manager": "https://10.0.0.1:6443", "prod": "https://10.0.0.2:6443/"},
			secret: true, context: "prod", matched: "its server address"},
		{name: "none", contexts: map[string]string{"manager": "https://10.0.0.1:6443"}, secret: true, configFile: mapped + ".none",
			err: "no context of your kubeconfig reaches worker cluster worker1 at https://10.0.0.2:6443: add a context named worker1, or pass --worker worker1=CONTEXT, or map it in " +
				mapped + ".none (workers: {worker1: CONTEXT})"},
		{name: "none, and the Secret not read", contexts: map[string]string{"manager": "https://10.0.0.1:6443"},
			err: "no context of your kubeconfig reaches worker cluster worker1: add a context named worker1, or pass --worker worker1=CONTEXT"},
		{name: "a flag that names no context", contexts: map[string]string{"manager": "https://10.0.0.1:6443", "worker1": "https://10.0.0.2:6443"},
			mapping: map[string]string{"worker1": "west"},
			err:     "--worker maps worker cluster worker1 to context west, which the kubeconfig does not have; it has: manager, worker1"},
		{name: "a config file that is not one", contexts: map[string]string{"worker1": "https://10.0.0.2:6443"}, configFile: broken,
			err: broken + `: error unmarshaling JSON: while decoding JSON: json: unknown field "worker"; it holds workers: {WORKER: CONTEXT}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var objects []string
			if c.secret {
				objects = mkCluster()
			}
			manager := cluster(t, nil, objects...)
			reaching(manager, worker, c.contexts, c.mapping, c.configFile)
			got, w, err := manager.ReachWorker(context.Background(), "worker1")
			if c.err != "" {
				require.EqualError(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Same(t, worker, got)
			require.Equal(t, Worker{Name: "worker1", Context: c.context, Matched: c.matched}, w)
		})
	}
}

// TestWorkerReachedOnce: the verbs ask for a worker again and again; it is
// found, and what reached it said, once.
func TestWorkerReachedOnce(t *testing.T) {
	manager, worker := cluster(t, nil), cluster(t, nil)
	reaching(manager, worker, map[string]string{"worker1": "https://10.0.0.2:6443"}, nil, "")
	var said strings.Builder
	workers := manager.Workers.(*kubeconfigWorkers)
	workers.verbose = &said
	dials := 0
	dial := workers.dial
	workers.dial = func(context string) (*Client, error) { dials++; return dial(context) }
	for range 3 {
		_, _, err := manager.ReachWorker(context.Background(), "worker1")
		require.NoError(t, err)
	}
	require.Equal(t, 1, dials)
	require.Equal(t, "worker cluster worker1: context worker1 (its name), server https://fake\n", said.String())
}

// managerAndWorker are the manager with the AppWrapper demo dispatched to
// worker1, and worker1 with its copy (in the phase given; none for ""),
// the copy's Workload and its two pods, one with a Warning event; the
// user's kubeconfig has a context worker1.
func managerAndWorker(t *testing.T, copyPhase string) (manager, worker *Client) {
	var there []string
	if copyPhase != "" {
		there = []string{appWrapper("{phase: " + copyPhase + ", conditions: [{type: PodsReady, status: 'True', reason: SufficientPodsReady}]}"), workloadOwnedBy("aw-uid", admittedWL),
			ptjPod("master", 0, "m", runningFor(0)), ptjPod("worker", 0, "w0", runningFor(0)), `
apiVersion: v1
kind: Event
metadata: {name: demo-worker-0.1, namespace: ml}
type: Warning
reason: BackOff
message: Back-off pulling image
count: 2
lastTimestamp: "2026-11-26T10:00:00Z"
involvedObject: {kind: Pod, name: demo-worker-0, namespace: ml}`}
	}
	worker = cluster(t, nil, there...)
	// MultiKueue copies the status of the copy to the manager's job, which
	// Kueue's webhook gave to MultiKueue.
	manager = cluster(t, nil, strings.Replace(appWrapper("{phase: Running, conditions: [{type: PodsReady, status: 'True', reason: SufficientPodsReady}]}"),
		"\nspec:\n", "\nspec:\n  managedBy: "+MultiKueueController+"\n", 1), workloadOwnedBy("aw-uid", dispatched))
	reaching(manager, worker, map[string]string{"manager": "https://10.0.0.1:6443", "worker1": "https://10.0.0.2:6443"}, nil, "")
	return manager, worker
}

func TestStatusOfADispatchedJob(t *testing.T) {
	manager, _ := managerAndWorker(t, "Running")
	s, err := manager.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Equal(t, &Worker{Name: "worker1", Context: "worker1", Matched: "its name", State: Running}, s.Worker)
	require.Equal(t, Running, s.State)
	// The pods and their events are the worker's.
	require.Equal(t, 2, s.Pods.Running)
	require.Len(t, s.Warnings, 1)
	require.Equal(t, "Pod demo-worker-0", s.Warnings[0].Object)
	require.Contains(t, s.Lines(), "\n  worker:    worker1 (context worker1, by its name): Running\n")
	require.Equal(t, "AppWrapper demo: Running on worker cluster worker1, pods ready 0/2", s.Line())
}

func TestStatusOfADispatchedJobWhoseCopyIsGone(t *testing.T) {
	manager, _ := managerAndWorker(t, "")
	s, err := manager.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Equal(t, &Worker{Name: "worker1", Context: "worker1", Matched: "its name"}, s.Worker)
	require.Contains(t, s.Lines(), "worker1 (context worker1, by its name): its copy there is gone (MultiKueue deletes it once the job has finished, or is held)")
}

func TestStatusOfADispatchedJobOnAWorkerNotReached(t *testing.T) {
	manager, worker := managerAndWorker(t, "Running")
	reaching(manager, worker, map[string]string{"manager": "https://10.0.0.1:6443"}, nil, "")
	s, err := manager.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err, "the manager's picture stands")
	require.Equal(t, Running, s.State)
	require.True(t, s.Pods.Unread, "the pods on the worker were not read")
	// The pods' line says they were not read, rather than counting none.
	require.Contains(t, s.Lines(), "  pods:      not read (2 expected)\n")
	require.Equal(t, "AppWrapper demo: Running on worker cluster worker1, pods not read", s.Line())
	require.Contains(t, s.Lines(), "  worker:    worker1: not read: no context of your kubeconfig reaches worker cluster worker1: add a context named worker1, or pass --worker worker1=CONTEXT\n")
}

// A job a MultiKueue manager offered to worker1, where no LocalQueue of its
// queue's name refuses it, and to worker2, which no context reaches: status
// says why it waits on each.
func TestStatusOfAJobOfferedToWorkers(t *testing.T) {
	offered := `{admission: {clusterQueue: multikueue-cq}, nominatedClusterNames: [worker2, worker1], conditions: [{type: QuotaReserved, status: 'True', reason: QuotaReserved}]}`
	refused := `{conditions: [{type: QuotaReserved, status: 'False', reason: Inadmissible, message: "LocalQueue multikueue-queue doesn't exist"}]}`
	worker := cluster(t, nil, workloadOwnedBy("manager-uid", refused))
	manager := cluster(t, nil, appWrapper("{phase: Suspended}"), workloadOwnedBy("aw-uid", offered))
	reaching(manager, worker, map[string]string{"manager": "https://10.0.0.1:6443", "worker1": "https://10.0.0.2:6443"}, nil, "")
	s, err := manager.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Equal(t, Queued, s.State)
	require.Nil(t, s.Worker)
	require.Equal(t, []Worker{
		{Name: "worker1", Context: "worker1", Matched: "its name", State: Queued, Waiting: "LocalQueue multikueue-queue doesn't exist"},
		{Name: "worker2", Unread: "no context of your kubeconfig reaches worker cluster worker2: add a context named worker2, or pass --worker worker2=CONTEXT"},
	}, s.Offered)
	require.Contains(t, s.Lines(), "\n  offered:   worker1 (context worker1, by its name): Queued: LocalQueue multikueue-queue doesn't exist\n"+
		"  offered:   worker2: not read: no context")
	require.Equal(t, "AppWrapper demo: Queued in LocalQueue team-a; on worker cluster worker1: LocalQueue multikueue-queue doesn't exist", s.Line())

	// Before MultiKueue has made the copy there.
	require.NoError(t, worker.Dynamic.Resource(worker.Kueue(context.Background(), "workloads")).Namespace("ml").Delete(context.Background(), "appwrapper-demo-7d9f2", metav1.DeleteOptions{}))
	s, err = manager.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Equal(t, "MultiKueue has not made its copy here yet", s.Offered[0].Waiting)
}

func TestLogsOfADispatchedJob(t *testing.T) {
	manager, worker := managerAndWorker(t, "Running")
	worker.LogSource = &fakeLogs{logs: map[string]string{"demo-master-0/pytorch": "master's line\n", "demo-worker-0/pytorch": "worker's line\n"}}
	manager.LogSource = &fakeLogs{err: errors.New("the manager holds no pods")}
	lines, notes, last, err := logs(t, manager, LogRequest{})
	require.NoError(t, err)
	require.Empty(t, notes)
	require.Equal(t, []string{"master-0|8|master's line", "worker-0|8|worker's line"}, lines)
	require.Equal(t, "worker1", last.Worker.Name)

	reaching(manager, worker, map[string]string{"manager": "https://10.0.0.1:6443"}, nil, "")
	_, _, _, err = logs(t, manager, LogRequest{})
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" runs on a MultiKueue worker cluster: no context of your kubeconfig reaches worker cluster worker1: add a context named worker1, or pass --worker worker1=CONTEXT`)
}

func TestLogsOfADispatchedJobThatFinished(t *testing.T) {
	manager, worker := cluster(t, nil, appWrapper("{phase: Succeeded}"), workloadOwnedBy("aw-uid", dispatched)), cluster(t, nil)
	reaching(manager, worker, map[string]string{"worker1": "https://10.0.0.2:6443"}, nil, "")
	_, notes, _, err := logs(t, manager, LogRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{"no logs: the pods ran on worker cluster worker1, where MultiKueue deletes them once the job has finished: AppWrapper demo: Succeeded"}, notes)
}

func TestListOfDispatchedJobs(t *testing.T) {
	manager, _ := managerAndWorker(t, "Running")
	l, err := manager.List(context.Background(), ListOptions{Namespace: "ml", Everyone: true})
	require.NoError(t, err)
	require.Empty(t, l.Notes)
	require.Len(t, l.Jobs, 1)
	require.Equal(t, 2, l.Jobs[0].Pods.Running)
	table := l.Table(false, false, l.Jobs[0].Created.Add(time.Minute))
	require.Equal(t, []string{"NAME", "KIND", "STATE", "WORKER", "QUEUE", "POSITION", "PODS", "GPUS", "RESTARTS", "AGE"}, strings.Fields(strings.SplitN(table, "\n", 2)[0]))
	require.Equal(t, []string{"demo", "AppWrapper", "Running", "worker1", "team-a", "-", "0/2", "0", "0", "-"}, strings.Fields(strings.Split(table, "\n")[1]))
}

// TestDeleteOfADispatchedJobWaitsForItsCopy: MultiKueue deletes the copy
// on the worker after the job; delete --wait waits for it, and says when
// it is left.
func TestDeleteOfADispatchedJobWaitsForItsCopy(t *testing.T) {
	manager, _ := managerAndWorker(t, "Running")
	manager.DeletionWait = 150 * time.Millisecond
	_, err := manager.Delete(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, true)
	require.EqualError(t, err, `the AppWrapper "demo" in namespace "ml" is still being deleted after 150ms (its copy on its MultiKueue worker cluster is left): what should delete it may be down; see it with generator status demo -n ml`)
}
