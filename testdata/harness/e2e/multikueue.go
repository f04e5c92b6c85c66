//go:build linux

package e2e

// A MultiKueue manager beside the simulated cluster: a second, small cluster
// (etcd, kube-apiserver, kube-controller-manager and Kueue, no nodes and no
// job controllers) whose Kueue dispatches the jobs queued there to the
// simulated cluster, its worker, where they run. The manager's Kueue is the
// simulated cluster's program, with the same integrations (AppWrapper,
// PyTorchJob, JobSet, TrainJob) and MultiKueue (multiKueueConfig); its
// objects are managerQueues, the worker's workerQueues.

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The names of the MultiKueue setup.
const (
	// MultiKueueWorker is the MultiKueueCluster of the simulated cluster,
	// Active once StartManager returns.
	MultiKueueWorker = "worker1"
	// MultiKueueDeadWorker is a MultiKueueCluster whose kubeconfig names a
	// port where nothing listens: it is never Active.
	MultiKueueDeadWorker = "worker2"
	// MultiKueueCheck is the manager's AdmissionCheck of MultiKueue, and the
	// MultiKueueConfig it names, of both workers. It stays Active (reason
	// SomeActiveClusters) while MultiKueueWorker is.
	MultiKueueCheck = "multikueue"
	// MultiKueueClusterQueue is the manager's ClusterQueue with that check.
	MultiKueueClusterQueue = "multikueue-cq"
	// MultiKueueQueue is the LocalQueue of MultiKueueClusterQueue on the
	// manager, in namespaces default and MultiKueueNamespace, and on the
	// worker, in namespace default, the LocalQueue of ProcessClusterQueue.
	MultiKueueQueue = "multikueue-queue"
	// MultiKueueNamespace is a namespace with MultiKueueQueue on the
	// manager, and none on the worker.
	MultiKueueNamespace = "mk-team"
)

// StartManager builds (or reuses) the programs of the repository at root,
// starts in dir a MultiKueue manager whose worker MultiKueueWorker is the
// simulated cluster worker, with the CRDs of the jobs crds (AppWrapper's and
// PyTorchJob's, as StartSimulated's), and returns it once MultiKueueWorker
// is Active and MultiKueueClusterQueue active. It makes workerQueues on the
// worker. On error, what was started is stopped. logf reports progress.
//
// The manager's Cluster is as the simulated cluster's: Kubeconfig is the
// admin's kubeconfig file, Kubectl runs kubectl against it, Stop stops it.
func StartManager(root, dir string, worker *Cluster, crds [][]byte, logf func(string, ...any)) (*Cluster, error) {
	return startOn(root, dir, "MultiKueue manager", logf, func(c *Cluster, sim SimBinaries, _ string) error {
		return c.startManager(sim, worker, crds)
	})
}

// startManager starts, against c, kube-controller-manager with what a
// cluster without pods needs (the garbage collector, which also deletes in
// the foreground, and the namespace controller) and Kueue with MultiKueue,
// with their configuration, certificates and logs in c's folder, installs
// the CRDs (Kueue's, JobSet's, Trainer's and crds), the namespaces, the
// priorityClasses, the ClusterTrainingRuntime torch-distributed (from which
// Kueue reads a TrainJob's pods), the kubeconfigs of the workers and
// managerQueues, makes workerQueues on worker, and waits until
// MultiKueueWorker is Active and MultiKueueClusterQueue active.
func (c *Cluster) startManager(b SimBinaries, worker *Cluster, crds [][]byte) error {
	dir := filepath.Join(c.dir, "multikueue")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	kcmPort, nowhere := ports[0], ports[1]
	kueue := kueuePorts{health: ports[2], metrics: ports[3], webhook: ports[4], visibility: ports[5]}
	ca, _, err := writeServingCert(dir)
	if err != nil {
		return err
	}
	shared, err := kueueCRDs(b, kueue, ca)
	if err != nil {
		return err
	}
	if err := c.CreateAll(slices.Concat(crds, shared)); err != nil {
		return err
	}
	workerCA, err := os.ReadFile(worker.caFile())
	if err != nil {
		return err
	}
	// The workers' kubeconfigs as MultiKueue takes them: the certificate
	// and the token in the file, not files it would read (it refuses
	// certificate-authority, tokenFile, insecure-skip-tls-verify, exec and
	// auth providers, unless its feature gate
	// MultiKueueAllowInsecureKubeconfigs is on). The dead worker's names a
	// port that was free a moment ago, on which nothing listens.
	objects := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: kueue-system}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n%s",
		MultiKueueNamespace, priorityClasses())
	for name, server := range map[string]string{
		MultiKueueWorker:     worker.server,
		MultiKueueDeadWorker: fmt.Sprintf("https://127.0.0.1:%d", nowhere),
	} {
		config := kubeconfig(kubeContext{name: name, server: server, caData: workerCA, user: admin, userName: admin.name})
		objects += "---\n" + fmt.Sprintf(kubeconfigSecret, name+"-kubeconfig", base64.StdEncoding.EncodeToString(config))
	}
	if err := c.CreateAll([][]byte{[]byte(objects)}); err != nil {
		return err
	}

	if err := c.startControllerManager(b, kcmPort, "--controllers=garbage-collector-controller,namespace-controller"); err != nil {
		return err
	}
	if err := c.startKueue(b, dir, kueue, multiKueueConfig); err != nil {
		return err
	}
	if err := c.waitURL("kube-controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), 2*time.Minute); err != nil {
		return err
	}
	if err := c.serveKueue(b, kueue, ca, []byte(torchDistributed), []byte(managerQueues())); err != nil {
		return err
	}
	if err := worker.CreateAll([][]byte{[]byte(workerQueues())}); err != nil {
		return err
	}
	return c.waitFor(fmt.Sprintf("MultiKueueCluster %s Active and ClusterQueue %s active", MultiKueueWorker, MultiKueueClusterQueue), 2*time.Minute, func() bool {
		cluster, err := c.Kubectl(nil, "get", "multikueueclusters.v1beta2.kueue.x-k8s.io", MultiKueueWorker, "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status}`)
		if err != nil || cluster != "True" {
			return false
		}
		queue, err := c.Kubectl(nil, "get", "clusterqueues.v1beta2.kueue.x-k8s.io", MultiKueueClusterQueue, "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status}`)
		return err == nil && queue == "True"
	})
}

// WriteMultiKubeconfig writes a kubeconfig file for a user (Admin or
// Researcher) with two contexts: "manager", the current one,
// and MultiKueueWorker, the worker, each with its API server's certificate
// as a file. Researcher may do on the manager only what every authenticated
// user may: no RoleBinding there names it.
func WriteMultiKubeconfig(path string, manager, worker *Cluster, user string) error {
	for _, u := range users {
		if u.name == user {
			return os.WriteFile(path, kubeconfig(
				kubeContext{name: "manager", server: manager.server, ca: manager.caFile(), user: u, userName: u.name + "-manager"},
				kubeContext{name: MultiKueueWorker, server: worker.server, ca: worker.caFile(), user: u, userName: u.name + "-" + MultiKueueWorker},
			), 0o600)
		}
	}
	return fmt.Errorf("no user %q in the token file", user)
}
