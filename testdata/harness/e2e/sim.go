//go:build linux

package e2e

// The simulated GPU cluster of make e2e-cluster: around the API server of a
// Cluster, the controllers that take a job from submission to its end, all
// upstream programs built from Go modules pinned in testdata/e2e:
//
//   - kube-controller-manager (garbage collection, namespaces) and
//     kube-scheduler, from the same Kubernetes release as the API server;
//   - kwok, which runs the fake GPU nodes and moves their pods through
//     Running to Succeeded or Failed, as the stages in kwokStages say;
//   - Kueue, with its AppWrapper, PyTorchJob, JobSet and TrainJob
//     integrations and topology-aware scheduling;
//   - the AppWrapper controller;
//   - the Kubeflow training operator (PyTorchJob);
//   - the JobSet controller;
//   - the Kubeflow Trainer v2 controller (TrainJob), with a
//     ClusterTrainingRuntime torch-distributed;
//   - the kubelet of the process nodes, whose pods run for real
//     (processnodes.go).
//
// The webhooks of the last five are served on loopback, with one
// certificate for 127.0.0.1 that StartSim writes.

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/testdata/harness/pinned"
)

// SimBinaries are the programs of the simulated cluster, next to those of
// Binaries.
type SimBinaries struct {
	ControllerManager, Scheduler, Kwok, Kueue, AppWrapper, TrainingOperator, JobSet, Trainer string
	// The folders of the modules of Kueue, AppWrapper, the training
	// operator, JobSet and Trainer, which hold their CRDs (Kueue's, JobSet's
	// and Trainer's are installed here) and webhook configurations.
	KueueModule, AppWrapperModule, TrainingOperatorModule, JobSetModule, TrainerModule string
}

// BuildSim builds the programs of the simulated cluster (pinned's
// KubeControllers and Controllers) from their wrapper modules below the
// repository's testdata folder, or reuses them from the cache.
func BuildSim(testdata string, logf func(string, ...any)) (SimBinaries, error) {
	var b SimBinaries
	bins := map[string]*string{
		"kube-controller-manager": &b.ControllerManager, "kube-scheduler": &b.Scheduler,
		"kwok": &b.Kwok, "appwrapper": &b.AppWrapper, "training-operator": &b.TrainingOperator,
		"kueue": &b.Kueue, "jobset": &b.JobSet, "trainer": &b.Trainer,
	}
	folders := map[string]*string{
		"appwrapper": &b.AppWrapperModule, "training-operator": &b.TrainingOperatorModule,
		"kueue": &b.KueueModule, "jobset": &b.JobSetModule, "trainer": &b.TrainerModule,
	}
	for _, set := range append([]pinned.Set{pinned.KubeControllers}, pinned.Controllers...) {
		dir, err := set.Build(testdata, logf)
		if err != nil {
			return b, err
		}
		for _, p := range set.Programs {
			bin, ok := bins[p.Name]
			if !ok {
				return b, fmt.Errorf("the simulated cluster does not run %s", p.Name)
			}
			*bin = filepath.Join(dir, p.Name)
			if folder, ok := folders[p.Name]; ok {
				if *folder, err = moduleDir(filepath.Join(testdata, set.Module), p.Module); err != nil {
					return b, err
				}
			}
		}
	}
	return b, nil
}

// StartSimulated builds the programs of the simulated cluster from the
// wrapper modules of the repository at root (or reuses them), starts the API
// server and the simulated cluster in dir, with the CRDs of the jobs crds
// and the programs of root's testdata/sim, and returns it running. On error,
// what was started is stopped. logf reports progress.
func StartSimulated(root, dir string, crds [][]byte, logf func(string, ...any)) (*Cluster, error) {
	return startOn(root, dir, "simulated cluster", logf, func(c *Cluster, sim SimBinaries, testdata string) error {
		return c.StartSim(sim, crds, filepath.Join(testdata, "sim"))
	})
}

// startOn builds the programs of the repository at root (or reuses them),
// starts an API server in dir, and then the rest of what (for the log) with
// start; on error, what was started is stopped.
func startOn(root, dir, what string, logf func(string, ...any), start func(c *Cluster, sim SimBinaries, testdata string) error) (*Cluster, error) {
	testdata := filepath.Join(root, "testdata")
	bins, err := Build(testdata, logf)
	if err != nil {
		return nil, err
	}
	sim, err := BuildSim(testdata, logf)
	if err != nil {
		return nil, err
	}
	c, err := Start(bins, dir)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if err := start(c, sim, testdata); err != nil {
		c.Stop()
		return nil, err
	}
	logf("%s ready in %s (after the API server)", what, time.Since(began).Round(time.Millisecond))
	return c, nil
}

// moduleDir is the folder of a module that the wrapper module requires, in
// the module cache.
func moduleDir(wrapper, module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = wrapper
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s in %s: %w", module, wrapper, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// SimNodes is the number of fake nodes, SimNodeGPUs the GPUs of each.
const (
	SimNodes    = 16
	SimNodeGPUs = 8
)

// SmallQueueGPUs and TinyQueueGPUs are the GPU quotas of ClusterQueues
// small-cq and tiny-cq (see clusterQueues).
const (
	SmallQueueGPUs = 16
	TinyQueueGPUs  = 8
)

// Namespaces of the simulated cluster for the tests of the commands that ask
// it (see userObjects).
const (
	// SimCheckNamespace holds LocalQueues default-queue and tiny-queue.
	SimCheckNamespace = "sim-check"
	// SimUnmanagedNamespace stands for a cluster whose Kueue does not manage
	// PyTorchJobs: Kueue's webhook leaves a PyTorchJob created there
	// unsuspended.
	SimUnmanagedNamespace = "sim-unmanaged"
	// SimRBACNamespace is the only namespace where Researcher may do
	// anything: read what ClusterRole view lets it read.
	SimRBACNamespace = "sim-rbac"
)

// StartSim starts the controllers of the simulated cluster against c, with
// their configuration, certificates and logs in c's folder, installs the
// CRDs (Kueue's and NetworkAttachmentDefinition) and the cluster's fixed
// objects (nodes, priority classes, queues, and what the jobs find in their
// namespaces: userObjects), starts the kubelet of the process nodes, and
// waits until every controller is ready. CRDs of the jobs (AppWrapper,
// PyTorchJob, T9k) are the caller's, in crds. programs is the folder of the
// process nodes' programs (testdata/sim), which the claim ProgramsClaim gives
// the pods: namespace default has it, and ProgramsClaim makes it in others.
func (c *Cluster) StartSim(b SimBinaries, crds [][]byte, programs string) error {
	dir := filepath.Join(c.dir, "sim")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ports, err := freePorts(15)
	if err != nil {
		return err
	}
	schedPort, kcmPort, kwokPort, awHealth, toHealth, toMetrics, toWebhook :=
		ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]
	jobSetHealth, jobSetWebhook, trainerHealth, trainerWebhook := ports[7], ports[8], ports[9], ports[10]
	kueue := kueuePorts{health: ports[11], metrics: ports[12], webhook: ports[13], visibility: ports[14]}

	ca, key, err := writeServingCert(dir)
	if err != nil {
		return err
	}
	shared, err := kueueCRDs(b, kueue, ca)
	if err != nil {
		return err
	}
	if err := c.CreateAll(slices.Concat(crds, shared, [][]byte{[]byte(nadCRD)})); err != nil {
		return err
	}
	if err := c.CreateAll([][]byte{[]byte(simObjects())}); err != nil {
		return err
	}
	roles, err := userRoles(b)
	if err != nil {
		return err
	}
	if err := c.CreateAll(roles); err != nil {
		return err
	}

	kc := c.Kubeconfig
	trainingLog := filepath.Join(dir, "kwok-logs", "training.log")
	if err := os.MkdirAll(filepath.Dir(trainingLog), 0o755); err != nil {
		return err
	}
	if err := writeTrainingLog(trainingLog, TrainingLogLines); err != nil {
		return err
	}
	files := map[string]string{
		"scheduler.yaml":   fmt.Sprintf(schedulerConfig, kc),
		"kwok-stages.yaml": kwokStages + fmt.Sprintf(kwokLogs, strings.Join(append([]string{SimScaleNamespace}, RolesNamespaces...), ", "), trainingLog),
		"jobset.yaml":      fmt.Sprintf(jobSetConfig, jobSetHealth, jobSetWebhook, filepath.Join(dir, "certs")),
		"trainer.yaml":     fmt.Sprintf(trainerConfig, trainerHealth, trainerWebhook),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	// The AppWrapper controller, the training operator and the Trainer
	// controller read their webhook server's certificate from a fixed path
	// under /tmp: each runs in a mount namespace of its own, where a folder
	// of ours takes that path's place (an empty /tmp/k8s-webhook-server is
	// the mount point). The JobSet controller reads its certificate from the
	// folder its configuration names; Kueue, see startKueue.
	webhookCerts := map[string]string{}
	for _, name := range []string{"appwrapper", "training-operator", "trainer"} {
		webhookCerts[name] = filepath.Join(dir, name+"-webhook")
		if err := copyCert(dir, filepath.Join(webhookCerts[name], "serving-certs")); err != nil {
			return err
		}
	}
	// The AppWrapper controller reads its configuration from a ConfigMap.
	// Its certificate rotator and the training operator's read their Secret
	// and put the CA in their webhook configurations before the programs are
	// ready: those come first, and no job is created before then. The JobSet
	// and Trainer controllers manage no certificates here (their
	// configurations say so): their webhook configurations carry the CA.
	awHooks, err := webhooks(filepath.Join(b.AppWrapperModule, "config", "webhook", "manifests.yaml"),
		func(name string) string { return "appwrapper-" + name }, "https://127.0.0.1:9443", ca)
	if err != nil {
		return err
	}
	toHooks, err := webhooks(filepath.Join(b.TrainingOperatorModule, "manifests", "base", "webhook", "manifests.yaml"),
		func(string) string { return "validator.training-operator.kubeflow.org" }, fmt.Sprintf("https://127.0.0.1:%d", toWebhook), ca)
	if err != nil {
		return err
	}
	objects := [][]byte{
		[]byte(fmt.Sprintf(appWrapperConfig, awHealth)),
		[]byte(fmt.Sprintf(certSecret, "appwrapper-system", "appwrapper-webhook-server-cert", pemData(ca), pemData(key))),
		[]byte(fmt.Sprintf(certSecret, "kubeflow", "training-operator-webhook-cert", pemData(ca), pemData(key))),
	}
	jobSetHooks, err := webhooks(filepath.Join(b.JobSetModule, "config", "components", "webhook", "manifests.yaml"),
		func(name string) string { return "jobset-" + name }, fmt.Sprintf("https://127.0.0.1:%d", jobSetWebhook), ca)
	if err != nil {
		return err
	}
	trainerHooks, err := webhooks(filepath.Join(b.TrainerModule, "manifests", "base", "webhook", "manifests.yaml"),
		func(name string) string { return "trainer-" + name }, fmt.Sprintf("https://127.0.0.1:%d", trainerWebhook), ca)
	if err != nil {
		return err
	}
	for _, hooks := range [][][]byte{awHooks, toHooks, jobSetHooks, trainerHooks} {
		objects = append(objects, hooks...)
	}
	if err := c.CreateAll(objects); err != nil {
		return err
	}

	if err := c.startControllerManager(b, kcmPort); err != nil {
		return err
	}
	if err := c.startKueue(b, dir, kueue, ""); err != nil {
		return err
	}
	env := []string{"KUBECONFIG=" + kc}
	starts := []struct {
		name string
		env  []string
		path string
		args []string
	}{
		// The scheduler reads its own kubeconfig from its configuration.
		{"kube-scheduler", nil, b.Scheduler, append(c.serving(schedPort), "--config="+filepath.Join(dir, "scheduler.yaml"))},
		{"kwok", nil, b.Kwok, []string{"--kubeconfig=" + kc,
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--config=" + filepath.Join(dir, "kwok-stages.yaml"),
			// The API server reaches kwok's server as the fake nodes'
			// kubelet (their address and port), for their pods' logs.
			fmt.Sprintf("--server-address=127.0.0.1:%d", kwokPort), fmt.Sprintf("--node-port=%d", kwokPort),
			"--node-ip=127.0.0.1", "--cidr=10.244.0.1/16",
			// Leases, renewed every 10 s, tell the controller manager
			// that the fake nodes live, as a kubelet's do. Without them
			// kwok 0.7 updates a node's status every 10 minutes only,
			// and every fake node went NotReady 3 minutes after the
			// cluster started, and again every 3 minutes.
			"--node-lease-duration-seconds=40"}},
		{"appwrapper", append(env, "NAMESPACE=appwrapper-system"), "unshare", privateMount([]bind{{webhookCerts["appwrapper"], "/tmp/k8s-webhook-server"}}, b.AppWrapper,
			"--config=appwrapper-operator-config")},
		{"training-operator", append(env, "MY_POD_NAMESPACE=kubeflow"), "unshare", privateMount([]bind{{webhookCerts["training-operator"], "/tmp/k8s-webhook-server"}}, b.TrainingOperator,
			"--enable-scheme=pytorchjob",
			// It makes (and on a hold deletes) a PyTorchJob's pods and
			// Services at 100 a second, not 20.
			"--kube-api-qps=100", "--kube-api-burst=200",
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", toMetrics),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", toHealth),
			fmt.Sprintf("--webhook-server-port=%d", toWebhook))},
		{"jobset", env, b.JobSet, []string{"--config=" + filepath.Join(dir, "jobset.yaml")}},
		{"trainer", env, "unshare", privateMount([]bind{{webhookCerts["trainer"], "/tmp/k8s-webhook-server"}}, b.Trainer,
			"--config="+filepath.Join(dir, "trainer.yaml"))},
	}
	for _, s := range starts {
		if err := c.start(s.name, s.env, s.path, s.args...); err != nil {
			return err
		}
	}
	for what, url := range map[string]string{
		"kube-scheduler":            fmt.Sprintf("https://127.0.0.1:%d/healthz", schedPort),
		"kube-controller-manager":   fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort),
		"the AppWrapper controller": fmt.Sprintf("http://127.0.0.1:%d/readyz", awHealth),
		"the training operator":     fmt.Sprintf("http://127.0.0.1:%d/readyz", toHealth),
		"the JobSet controller":     fmt.Sprintf("http://127.0.0.1:%d/readyz", jobSetHealth),
		"the Trainer controller":    fmt.Sprintf("http://127.0.0.1:%d/readyz", trainerHealth),
	} {
		if err := c.waitURL(what, url, 2*time.Minute); err != nil {
			return err
		}
	}

	// The queues, which Kueue's validating webhook admits, the users'
	// objects, and the training runtime, which the Trainer controller's
	// webhook admits.
	if err := c.serveKueue(b, kueue, ca, []byte(queues()), []byte(userObjects()), []byte(torchDistributed)); err != nil {
		return err
	}
	c.programs = programs
	if err := c.ProgramsClaim("default"); err != nil {
		return err
	}
	allocatable := corev1.ResourceList{}
	for name, q := range map[corev1.ResourceName]string{"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": fmt.Sprint(SimNodeGPUs)} {
		allocatable[name] = resource.MustParse(q)
	}
	if c.processNodes, err = StartProcessKubelet(kc, filepath.Join(dir, "process-nodes"), processNodeNames(), allocatable,
		filepath.Join(dir, "certs", "tls.crt"), filepath.Join(dir, "certs", "tls.key")); err != nil {
		return err
	}
	return c.waitFor("the nodes Ready and the ClusterQueues active", 2*time.Minute, func() bool {
		nodes, err := c.Kubectl(nil, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if err != nil || strings.Count(nodes, "True") != SimNodes+ProcessNodes {
			return false
		}
		active, err := c.Kubectl(nil, "get", "clusterqueues", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Active")].status}{"\n"}{end}`)
		return err == nil && strings.Count(active, "True") == len(clusterQueues)
	})
}

// ProgramsClaim makes the claim ProgramsClaim, which gives the process nodes'
// pods the programs of testdata/sim, in a namespace.
func (c *Cluster) ProgramsClaim(namespace string) error {
	_, err := c.Kubectl([]byte(programsClaim(namespace, c.programs)), "create", "-f", "-")
	return err
}

// kueuePorts are where a Kueue listens on loopback: its health probes, its
// metrics, its webhooks and its visibility API.
type kueuePorts struct{ health, metrics, webhook, visibility int }

// url is the address of Kueue's webhooks.
func (p kueuePorts) url() string { return fmt.Sprintf("https://127.0.0.1:%d", p.webhook) }

// readyz is the address of Kueue's readiness probe.
func (p kueuePorts) readyz() string { return fmt.Sprintf("http://127.0.0.1:%d/readyz", p.health) }

// kueueCRDs are the CRDs that a cluster with the Kueue of ports installs from
// the modules: Kueue's, with the conversion webhooks its kustomization turns
// on pointed at that Kueue with the certificate ca, JobSet's and Trainer's.
func kueueCRDs(b SimBinaries, p kueuePorts, ca []byte) ([][]byte, error) {
	converted, err := conversions(filepath.Join(b.KueueModule, "config", "components", "crd"), p.url(), ca)
	if err != nil {
		return nil, err
	}
	var crds [][]byte
	for _, pattern := range []string{
		filepath.Join(b.KueueModule, "config", "components", "crd", "bases", "*.yaml"),
		filepath.Join(b.JobSetModule, "config", "components", "crd", "bases", "*.yaml"),
		filepath.Join(b.TrainerModule, "manifests", "base", "crds", "trainer.kubeflow.org_*.yaml"),
	} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			if data, err = withConversion(data, converted); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			crds = append(crds, data)
		}
	}
	return crds, nil
}

// userRoles are the ClusterRoles for users that Kueue and the AppWrapper
// controller install, named as their kustomizations name them: Kueue's
// batch-user role (kueue-batch-user-role), which aggregates the roles
// labelled rbac.kueue.x-k8s.io/batch-user, and those; AppWrapper's editor
// and viewer roles, aggregated into Kubernetes' edit, admin and view (its
// config/default patches add those labels).
func userRoles(b SimBinaries) ([][]byte, error) {
	var roles [][]byte
	add := func(file, prefix string, labels map[string]string, keep func(map[string]string) bool) error {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var role map[string]any
		if err := sigsyaml.Unmarshal(data, &role); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		meta, _ := role["metadata"].(map[string]any)
		have := map[string]string{}
		if l, ok := meta["labels"].(map[string]any); ok {
			for k, v := range l {
				have[k], _ = v.(string)
			}
		}
		if keep != nil && !keep(have) {
			return nil
		}
		for k, v := range labels {
			have[k] = v
		}
		meta["labels"], meta["name"] = have, prefix+meta["name"].(string)
		data, err = sigsyaml.Marshal(role)
		roles = append(roles, data)
		return err
	}
	kueueRoles, err := filepath.Glob(filepath.Join(b.KueueModule, "config", "components", "rbac", "*_role.yaml"))
	if err != nil {
		return nil, err
	}
	for _, file := range kueueRoles {
		keep := func(labels map[string]string) bool { return labels["rbac.kueue.x-k8s.io/batch-user"] == "true" }
		if filepath.Base(file) == "batch_user_role.yaml" {
			keep = nil
		}
		if err := add(file, "kueue-", nil, keep); err != nil {
			return nil, err
		}
	}
	rbac := filepath.Join(b.AppWrapperModule, "config", "rbac")
	for file, labels := range map[string]map[string]string{
		"editor_role.yaml": {"rbac.authorization.k8s.io/aggregate-to-edit": "true", "rbac.authorization.k8s.io/aggregate-to-admin": "true"},
		"viewer_role.yaml": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
	} {
		if err := add(filepath.Join(rbac, file), "appwrapper-", labels, nil); err != nil {
			return nil, err
		}
	}
	return roles, nil
}

// serving are the arguments that say how kube-controller-manager and
// kube-scheduler check their callers (through c's API server, as the admin),
// and where they listen.
func (c *Cluster) serving(port int) []string {
	return []string{"--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port)}
}

// startControllerManager starts kube-controller-manager against c, serving
// its health on port, with more arguments (--controllers, to run fewer than
// all). It does not wait until it is ready.
func (c *Cluster) startControllerManager(b SimBinaries, port int, more ...string) error {
	// kwok renews the fake nodes' leases from one process, which shares
	// two cores with the process nodes' PyTorch and run --local: a node is
	// taken for lost after 3 minutes without a renewal, not 40 s, lest a
	// busy minute mark every fake node NotReady under a running job.
	// Its garbage collector deletes the pods of a job deleted or held at
	// 100 a second, not 20: a job of a thousand pods goes in seconds.
	args := append(c.serving(port), "--kubeconfig="+c.Kubeconfig, "--kube-api-qps=100", "--kube-api-burst=200",
		"--leader-elect=false", "--use-service-account-credentials=false", "--node-monitor-grace-period=3m",
		"--service-account-private-key-file="+filepath.Join(c.dir, "sa.key"),
		"--root-ca-file="+c.caFile())
	return c.start("kube-controller-manager", nil, b.ControllerManager, append(args, more...)...)
}

// startKueue starts Kueue against c, listening on ports, with its
// configuration (kueueConfig, and more after it) in dir, whose certs folder
// holds the serving certificate (writeServingCert's). It does not wait until
// Kueue is ready.
//
// Kueue reads its metrics certificate from a fixed path under /etc: it runs
// in a mount namespace of its own, where a copy of /etc in dir, with that
// certificate in it, takes the place of /etc; its visibility API's
// certificate, from /visibility, is the serving certificate too.
func (c *Cluster) startKueue(b SimBinaries, dir string, p kueuePorts, more string) error {
	config := fmt.Sprintf(kueueConfig, p.health, p.metrics, p.webhook, filepath.Join(dir, "certs"), p.visibility) + more
	if err := os.WriteFile(filepath.Join(dir, "kueue.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	etc := filepath.Join(dir, "etc")
	if out, err := exec.Command("cp", "-a", "/etc", etc).CombinedOutput(); err != nil {
		return fmt.Errorf("copying /etc for Kueue: %v: %s", err, out)
	}
	if err := copyCert(dir, filepath.Join(etc, "kueue", "metrics", "certs")); err != nil {
		return err
	}
	return c.start("kueue", []string{"KUBECONFIG=" + c.Kubeconfig}, "unshare",
		privateMount([]bind{{etc, "/etc"}, {filepath.Join(dir, "certs"), "/visibility"}}, b.Kueue,
			"--config="+filepath.Join(dir, "kueue.yaml"), "--kubeconfig="+c.Kubeconfig)...)
}

// serveKueue creates, once the Kueue of ports is ready, its webhook
// configurations (with the certificate ca), then the objects of the YAML
// streams given (which its webhooks admit: queues, say), and registers its
// visibility API with the API server, waiting until it is available.
func (c *Cluster) serveKueue(b SimBinaries, p kueuePorts, ca []byte, objects ...[]byte) error {
	if err := c.waitURL("Kueue", p.readyz(), 2*time.Minute); err != nil {
		return err
	}
	hooks, err := webhooks(filepath.Join(b.KueueModule, "config", "components", "webhook", "manifests.yaml"),
		func(name string) string { return "kueue-" + name }, p.url(), ca)
	if err != nil {
		return err
	}
	if err := c.CreateAll(append(append(hooks, objects...), []byte(fmt.Sprintf(visibilityAPI, p.visibility)))); err != nil {
		return err
	}
	return c.waitFor("Kueue's visibility API Available", time.Minute, func() bool {
		out, err := c.Kubectl(nil, "get", "apiservices", "v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io",
			"-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Available")].status},{end}`)
		return err == nil && out == "True,True,"
	})
}

// bind is a folder of the test (from) put in place of a folder (at) of a
// program's mount namespace.
type bind struct{ from, at string }

// privateMount is the command line of unshare that runs program with args in
// a mount namespace of its own, where each bind's folder replaces the folder
// at its place (created empty first if there is none, as the mount point).
// Without root, a user namespace of its own gives it the right to mount.
func privateMount(binds []bind, program string, args ...string) []string {
	unshare := []string{"--mount"}
	if os.Geteuid() != 0 {
		unshare = append(unshare, "--user", "--map-root-user")
	}
	argv := append(unshare, "--", "sh", "-c",
		`while [ "$1" != -- ]; do mkdir -p "$2" && mount --bind "$1" "$2" || exit 1; shift 2; done; shift; exec "$@"`, "sh")
	for _, b := range binds {
		argv = append(argv, b.from, b.at)
	}
	return append(append(argv, "--", program), args...)
}

// CreateAll creates the objects of each YAML stream, in order, and waits
// until every CRD is Established.
func (c *Cluster) CreateAll(streams [][]byte) error {
	for _, stream := range streams {
		if _, err := c.Kubectl(stream, "create", "-f", "-"); err != nil {
			return err
		}
	}
	return c.waitFor("the CRDs Established", time.Minute, func() bool {
		out, err := c.Kubectl(nil, "get", "crds", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Established")].status},{end}`)
		return err == nil && !strings.Contains(strings.ReplaceAll(out, "True,", ""), ",")
	})
}

// waitFor polls ready until it holds, failing early when a started process
// has exited.
func (c *Cluster) waitFor(what string, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, p := range c.procs {
			if p.exited() {
				return fmt.Errorf("%s exited: %s\n%s", p.name, p.cmd.ProcessState, c.logTail())
			}
		}
		if ready() {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("%s: not after %s\n%s", what, timeout, c.logTail())
}

// Memory is the peak resident memory (VmHWM) of each running process, in KiB,
// by name.
func (c *Cluster) Memory() map[string]int {
	peaks := map[string]int{}
	for _, p := range c.procs {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if value, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				var kib int
				fmt.Sscanf(strings.TrimSpace(value), "%d", &kib)
				peaks[p.name] = kib
			}
		}
	}
	return peaks
}

// The certificate rotators of the AppWrapper controller and the training
// operator keep a certificate they find valid in their Secret: one for their
// CA's name and their webhook Service's name, which lasts beyond their 90-day
// look-ahead.
var rotatorNames = []string{
	"appwrapper-ca", "appwrapper-webhook-service.appwrapper-system.svc",
	"training-operator-ca", "training-operator.kubeflow.svc",
}

// writeServingCert writes a self-signed certificate, for 127.0.0.1 and the
// names the certificate rotators check, which serves every webhook and
// Kueue's metrics, to dir/certs/tls.crt and tls.key, and returns the
// certificate and key (PEM).
func writeServingCert(dir string) (cert, key []byte, err error) {
	// RSA, in PKCS #1: the only key the AppWrapper controller's rotator reads.
	private, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              rotatorNames,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &private.PublicKey, private)
	if err != nil {
		return nil, nil, err
	}
	cert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	key = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(private)})
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certs, 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(certs, "tls.crt"), cert, 0o644); err != nil {
		return nil, nil, err
	}
	return cert, key, os.WriteFile(filepath.Join(certs, "tls.key"), key, 0o600)
}

// pemData is PEM text as the base64 of a Secret's data.
func pemData(pem []byte) string { return base64.StdEncoding.EncodeToString(pem) }

// copyCert copies dir/certs/tls.crt and tls.key into the folder to.
func copyCert(dir, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(dir, "certs", name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// webhooks are the webhook configurations in a module's manifests (file),
// renamed by rename, cut down to the webhooks of the kinds this cluster
// has (Kueue's and Trainer's own, AppWrapper, PyTorchJob, JobSet, TrainJob;
// not the pod webhooks of Kueue and JobSet, which serve integrations and
// exclusive placement that nothing here uses), and pointed at url with the
// certificate ca: Kueue serves no webhook for the integrations it does not
// run, and the API server would then refuse every pod, Job or Deployment.
//
// Kueue's PyTorchJob webhook, which suspends a new PyTorchJob that has a
// queue label, leaves out the namespaces labelled kueuePyTorchJobLabel "off"
// (SimUnmanagedNamespace): there a PyTorchJob is created as on a cluster
// whose Kueue does not manage PyTorchJobs (its kubeflow.org/pytorchjob
// integration off, the default since Kueue v0.19), unsuspended, which is
// what a server-side dry-run shows. Kueue's controller still manages it: a
// PyTorchJob really created there with a queue label is suspended as soon as
// Kueue sees it running without a Workload.
func webhooks(file string, rename func(string) string, url string, ca []byte) ([][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	served := func(group, resource string) bool {
		switch resource {
		case "appwrappers", "pytorchjobs", "jobsets", "trainjobs":
			return true
		}
		return group == "kueue.x-k8s.io" || group == "trainer.kubeflow.org"
	}
	var out [][]byte
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var config map[string]any
		if err := sigsyaml.Unmarshal([]byte(doc), &config); err != nil {
			return nil, err
		}
		if config == nil {
			continue
		}
		metadata := config["metadata"].(map[string]any)
		metadata["name"] = rename(metadata["name"].(string))
		var kept []any
		hooks, _ := config["webhooks"].([]any)
		for _, h := range hooks {
			hook := h.(map[string]any)
			rules, _ := hook["rules"].([]any)
			if len(rules) == 0 {
				continue
			}
			rule := rules[0].(map[string]any)
			groups, _ := rule["apiGroups"].([]any)
			resources, _ := rule["resources"].([]any)
			if len(groups) == 0 || len(resources) == 0 || !served(fmt.Sprint(groups[0]), fmt.Sprint(resources[0])) {
				continue
			}
			client := hook["clientConfig"].(map[string]any)
			path := client["service"].(map[string]any)["path"].(string)
			hook["clientConfig"] = map[string]any{"url": url + path, "caBundle": base64.StdEncoding.EncodeToString(ca)}
			if hook["name"] == "mpytorchjob.kb.io" {
				hook["namespaceSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
					"key": kueuePyTorchJobLabel, "operator": "NotIn", "values": []any{"off"}}}}
			}
			kept = append(kept, hook)
		}
		config["webhooks"] = kept
		doc, err := sigsyaml.Marshal(config)
		if err != nil {
			return nil, err
		}
		out = append(out, doc)
	}
	return out, nil
}

// conversions are the conversion settings of the CRDs whose conversion
// webhook a module's kustomization (in the folder dir) turns on, by CRD
// name, pointed at url with the certificate ca: Kueue serves several
// versions of its API and converts between them itself.
func conversions(dir, url string, ca []byte) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var kustomization struct {
		Patches []struct{ Path string }
	}
	if err := sigsyaml.Unmarshal(data, &kustomization); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, p := range kustomization.Patches {
		if !strings.HasPrefix(filepath.Base(p.Path), "webhook_in_") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, p.Path))
		if err != nil {
			return nil, err
		}
		var patch struct {
			Metadata struct{ Name string }
			Spec     struct {
				Conversion struct {
					Strategy string
					Webhook  struct {
						ClientConfig struct {
							Service struct{ Path string }
						} `json:"clientConfig"`
						ConversionReviewVersions []string `json:"conversionReviewVersions"`
					}
				}
			}
		}
		if err := sigsyaml.Unmarshal(data, &patch); err != nil {
			return nil, err
		}
		conversion := patch.Spec.Conversion
		out[patch.Metadata.Name] = map[string]any{
			"strategy": conversion.Strategy,
			"webhook": map[string]any{
				"clientConfig":             map[string]any{"url": url + conversion.Webhook.ClientConfig.Service.Path, "caBundle": base64.StdEncoding.EncodeToString(ca)},
				"conversionReviewVersions": conversion.Webhook.ConversionReviewVersions,
			},
		}
	}
	return out, nil
}

// withConversion is a CRD with the conversion settings that converted has
// for its name, if any.
func withConversion(crd []byte, converted map[string]any) ([]byte, error) {
	var object map[string]any
	if err := sigsyaml.Unmarshal(crd, &object); err != nil {
		return nil, err
	}
	conversion, ok := converted[object["metadata"].(map[string]any)["name"].(string)]
	if !ok {
		return crd, nil
	}
	object["spec"].(map[string]any)["conversion"] = conversion
	return sigsyaml.Marshal(object)
}
