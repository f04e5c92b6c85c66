package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// A cluster that Kueue's MultiKueue manages is a manager: a job submitted
// there is admitted there, and then a copy of it (its Workload and the job)
// is made on a worker cluster, where its pods run; the manager's job mirrors
// the status of the copy. When the job has finished, or is held, MultiKueue
// deletes the copy. holder is the one place that decides which cluster
// holds a job's pods: the verbs read them, their logs and their events
// from the cluster it gives.

// Worker is the worker cluster a MultiKueue manager dispatched a job to, as
// the user reaches it.
type Worker struct {
	// Name is its MultiKueueCluster's name on the manager, which the job's
	// Workload gives (status.clusterName).
	Name string `json:"name"`
	// Context is the kubeconfig context that reaches it, and Matched how
	// it was found: "--worker", the generator's config file, "its name",
	// "its server address"; both "" when no context reaches it.
	Context string `json:"context,omitempty"`
	Matched string `json:"matched,omitempty"`
	// State and Phase are the job's there, as its copy says; "" when the
	// copy was not read (Unread says why) or is gone.
	State State  `json:"state,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Waiting says why the job's copy waits there, for a worker cluster
	// the manager offered a job that no worker has admitted yet.
	Waiting string `json:"waiting,omitempty"`
	// Unread says why the worker could not be read.
	Unread string `json:"unread,omitempty"`
}

// Workers reach the worker clusters of a MultiKueue manager.
type Workers interface {
	// Reach gives the clients of the worker cluster of that name (its
	// MultiKueueCluster on the manager), and how it was reached.
	Reach(ctx context.Context, manager *Client, name string) (*Client, Worker, error)
}

// kubeconfigWorkers reach the worker clusters through the user's
// kubeconfig, each at most once a run: the context that a mapping names
// (--worker NAME=CONTEXT, else the config file's workers), else the context
// named as the worker, else the one whose server is the worker's (read from
// the kubeconfig Secret of its MultiKueueCluster, where the user may read
// it).
type kubeconfigWorkers struct {
	// mapping maps worker clusters to contexts (--worker); configFile is
	// the config file, which may map them too ("" for none).
	mapping    map[string]string
	configFile string
	// kubeconfig reads the user's kubeconfig; dial makes the clients of
	// one of its contexts.
	kubeconfig func() (clientcmdapi.Config, error)
	dial       func(context string) (*Client, error)
	// verbose, when not nil, is told which context reaches each worker.
	verbose io.Writer

	mu      sync.Mutex
	reached map[string]reached
}

type reached struct {
	client *Client
	worker Worker
	err    error
}

// ConfigFile is the generator's config file, which maps worker clusters to
// kubeconfig contexts:
//
//	workers:
//	  worker-east: prod-east-admin
func ConfigFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "torchwrap-generator", "config.yaml"), nil
}

// config is what the config file holds.
type config struct {
	// Workers maps the name of a MultiKueueCluster to a kubeconfig context.
	Workers map[string]string `json:"workers"`
}

// readConfig reads the config file; none is an empty config.
func readConfig(path string) (config, error) {
	var c config
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, fmt.Errorf("%s: %v; it holds workers: {WORKER: CONTEXT}", path, err)
	}
	return c, nil
}

// NoWorkerContext is the error for a worker cluster that no context of the
// user's kubeconfig reaches.
type NoWorkerContext struct {
	Name, Server, ConfigFile string
}

func (e NoWorkerContext) Error() string {
	at := ""
	if e.Server != "" {
		at = " at " + e.Server
	}
	config := ""
	if e.ConfigFile != "" {
		config = fmt.Sprintf(", or map it in %s (workers: {%s: CONTEXT})", e.ConfigFile, e.Name)
	}
	return fmt.Sprintf("no context of your kubeconfig reaches worker cluster %s%s: add a context named %s, or pass --worker %s=CONTEXT%s",
		e.Name, at, e.Name, e.Name, config)
}

// ReachWorker reaches the worker cluster of a MultiKueue manager of that
// name (its MultiKueueCluster); the error is NoWorkerContext when nothing
// reaches it.
func (c *Client) ReachWorker(ctx context.Context, name string) (*Client, Worker, error) {
	if c.Workers == nil {
		return nil, Worker{Name: name}, NoWorkerContext{Name: name}
	}
	return c.Workers.Reach(ctx, c, name)
}

func (w *kubeconfigWorkers) Reach(ctx context.Context, manager *Client, name string) (*Client, Worker, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.reached[name]; ok {
		return r.client, r.worker, r.err
	}
	r := reached{worker: Worker{Name: name}}
	r.worker.Context, r.worker.Matched, r.err = w.match(ctx, manager, name)
	if r.err == nil {
		r.client, r.err = w.dial(r.worker.Context)
	}
	if r.err == nil {
		r.client.Poll, r.client.Keeper = manager.Poll, manager.Keeper
		if w.verbose != nil {
			fmt.Fprintf(w.verbose, "worker cluster %s: context %s (%s), server %s\n", name, r.worker.Context, r.worker.Matched, r.client.Server)
		}
	}
	if w.reached == nil {
		w.reached = map[string]reached{}
	}
	w.reached[name] = r
	return r.client, r.worker, r.err
}

// match finds the context that reaches a worker cluster, and says how.
func (w *kubeconfigWorkers) match(ctx context.Context, manager *Client, name string) (context, how string, err error) {
	raw, err := w.kubeconfig()
	if err != nil {
		return "", "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	has := func(context, how string) (string, string, error) {
		if _, ok := raw.Contexts[context]; !ok {
			return "", "", BadFlag{Err: fmt.Errorf("%s maps worker cluster %s to context %s, which the kubeconfig does not have; it has: %s", how, name, context, contextNames(raw))}
		}
		return context, how, nil
	}
	if context, ok := w.mapping[name]; ok {
		return has(context, "--worker")
	}
	conf, err := readConfig(w.configFile)
	if err != nil {
		return "", "", err
	}
	if context, ok := conf.Workers[name]; ok {
		return has(context, w.configFile)
	}
	if _, ok := raw.Contexts[name]; ok {
		return name, "its name", nil
	}
	server := manager.workerServer(ctx, name)
	if server != "" {
		var same []string
		for context, c := range raw.Contexts {
			if cl, ok := raw.Clusters[c.Cluster]; ok && sameServer(cl.Server, server) {
				same = append(same, context)
			}
		}
		sort.Strings(same)
		if len(same) > 0 {
			return same[0], "its server address", nil
		}
	}
	return "", "", NoWorkerContext{Name: name, Server: server, ConfigFile: w.configFile}
}

// contextNames are the kubeconfig's contexts, sorted and joined.
func contextNames(raw clientcmdapi.Config) string {
	names := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func sameServer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// kueueNamespace is where Kueue is installed by default, whose Secrets hold
// the kubeconfigs of the worker clusters.
const kueueNamespace = "kueue-system"

// workerServer reads the address of a worker cluster from the kubeconfig
// Secret its MultiKueueCluster names; "" when it cannot be read (an
// administrator's Secret, which a user may well not read).
func (c *Client) workerServer(ctx context.Context, name string) string {
	mkc, err := c.Dynamic.Resource(c.Kueue(ctx, "multikueueclusters")).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	secret, found := kubeconfigSecret(mkc)
	if !found {
		return ""
	}
	data, err := c.Secret(ctx, kueueNamespace, secret)
	if err != nil || data["kubeconfig"] == "" {
		return ""
	}
	config, err := clientcmd.Load([]byte(data["kubeconfig"]))
	if err != nil {
		return ""
	}
	if context, ok := config.Contexts[config.CurrentContext]; ok {
		if cl, ok := config.Clusters[context.Cluster]; ok {
			return cl.Server
		}
	}
	return ""
}

// kubeconfigSecret is the Secret a MultiKueueCluster reads its worker's
// kubeconfig from: spec.clusterSource.kubeConfig (v1beta2) or
// spec.kubeConfig (v1beta1), of locationType Secret (the default).
func kubeconfigSecret(mkc *unstructured.Unstructured) (string, bool) {
	for _, path := range [][]string{{"spec", "clusterSource", "kubeConfig"}, {"spec", "kubeConfig"}} {
		kc, ok, _ := unstructured.NestedStringMap(mkc.Object, path...)
		if ok && (kc["locationType"] == "" || kc["locationType"] == "Secret") && kc["location"] != "" {
			return kc["location"], true
		}
	}
	return "", false
}

// holder is the cluster that holds a job's pods, decided from its Workload
// (nil for none): this one, or, for a job that a MultiKueue manager
// dispatched (status.clusterName), the worker's, with how it was reached.
// The error says why the worker cannot be read.
func (c *Client) holder(ctx context.Context, wl *workload) (*Client, *Worker, error) {
	if wl == nil || wl.Status.ClusterName == "" {
		return c, nil, nil
	}
	pods, w, err := c.ReachWorker(ctx, wl.Status.ClusterName)
	if err != nil {
		w.Unread = err.Error()
	}
	return pods, &w, err
}

// copyOn reads the worker's copy of a job and its state there, with its
// pods there, from what a follower's n watches of it (else read); a copy
// that is gone leaves the state empty.
func (n *noticing) copyOn(ctx context.Context, worker *Client, w *Worker, obj *unstructured.Unstructured, podList []corev1.Pod) {
	ref := Ref{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	var copied *unstructured.Unstructured
	var err error
	var workloadOf func(context.Context, *unstructured.Unstructured) (*workload, error)
	if n == nil {
		copied, err = worker.get(ctx, ref)
		workloadOf = worker.workloadOf
	} else {
		if n.copies[worker] == nil {
			n.copies[worker] = worker.sight(ctx, ref, n.poke)
		}
		copied, err = n.copies[worker].object(ctx)
		workloadOf = n.copies[worker].workloadOf
	}
	if err != nil {
		if !errors.As(err, &NotFound{}) {
			w.Unread = err.Error()
		}
		return
	}
	wl, err := workloadOf(ctx, copied)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		w.Unread = err.Error()
	}
	s, err := picture(copied, podList, wl)
	if err != nil {
		w.Unread = err.Error()
		return
	}
	w.State, w.Phase = s.State, s.Phase
}

// offered reads, for a queued job that a MultiKueue manager has offered to
// worker clusters (status.nominatedClusterNames) none of which has admitted
// it yet, why it waits on each: the worker's Kueue says it on the copy of
// the Workload there (no LocalQueue of that name, no quota), and the
// manager does not mirror it.
func (c *Client) offered(ctx context.Context, wl *workload) []Worker {
	if wl == nil || wl.Status.ClusterName != "" {
		return nil
	}
	var workers []Worker
	for _, name := range slices.Sorted(slices.Values(wl.Status.NominatedClusterNames)) {
		on, w, err := c.ReachWorker(ctx, name)
		if err == nil {
			w.State = Queued
			w.Waiting, err = on.copyWaits(ctx, wl)
		}
		if err != nil {
			w.Unread = err.Error()
		}
		workers = append(workers, w)
	}
	return workers
}

// copyWaits says why the copy of a manager's Workload waits on this worker
// cluster.
func (c *Client) copyWaits(ctx context.Context, wl *workload) (string, error) {
	obj, err := c.Dynamic.Resource(c.Kueue(ctx, "workloads")).Namespace(wl.Namespace).Get(ctx, wl.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "MultiKueue has not made its copy here yet", nil
	case err != nil:
		return "", fmt.Errorf("reading the copy of Workload %s: %w", wl.Name, err)
	}
	var copied workload
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &copied); err != nil {
		return "", fmt.Errorf("reading the copy of Workload %s: %w", wl.Name, err)
	}
	reason, message := waiting(&copied)
	if message == "" {
		return reason, nil
	}
	return message, nil
}
