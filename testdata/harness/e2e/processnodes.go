//go:build linux

package e2e

// The process nodes of the simulated cluster: nodes whose pods run for real,
// as processes of this machine, where kwok only pretends. ProcessKubelet is
// their kubelet. For each pod the scheduler binds to one of them it:
//
//   - makes the pod's sandbox (podnet.go): its own network namespace and
//     address, its host name, its /etc/hosts and /etc/resolv.conf (the DNS
//     server of dns.go), its own /tmp, and its volumes (emptyDir, as tmpfs
//     for medium Memory; ConfigMaps and Secrets, written out; a
//     PersistentVolumeClaim bound to a hostPath PersistentVolume as that
//     path, any other claim as a folder of its own that lives as long as
//     the process nodes; ephemeral volumes; hostPath);
//   - runs the init containers in turn, then the containers, each from its
//     command and arguments (the image is not pulled: this machine's
//     programs stand for it, with the folder of the harness's tools first on
//     PATH, where torchrun is), in the pod's namespaces and a PID namespace
//     of its own, with the environment the kubelet would give (the product's pkg/local),
//     from its workingDir (the pod's own /tmp when it has none: an image's
//     WORKDIR is not known here);
//   - restarts them as the pod's restartPolicy says, after a back-off of 1 s
//     doubling up to 10 s (a kubelet's starts at 10 s and goes up to 5
//     minutes);
//   - reports the pod's status as a kubelet does (phase, conditions,
//     addresses, each container's state with its real exit code and restart
//     count) and the events Started, BackOff and Failed;
//   - keeps each run's output and serves it to the API server (podlogs.go),
//     so pods/log works;
//   - on deletion sends SIGTERM to the containers' processes, SIGKILL after
//     the grace period, takes the sandbox down and deletes the pod.
//
// It keeps the nodes' Ready condition fresh. It needs root (namespaces,
// mounts, links).

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/torchwrap/generator/pkg/local"
)

// torchrun is the torchrun of the process nodes' containers: Debian's
// PyTorch 1.13 under Python 3.11 fails at start in its own torchrun (see
// the file), which this one mends before it runs torch.distributed.run.
//
//go:embed tools/torchrun
var torchrun []byte

// processPATH is the PATH of the containers, after the tools' folder: the
// programs of this machine stand for those of the image.
const processPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// podTools is where each pod sees the tools' folder (WriteTools), bound
// before the pod's own /tmp is: the user's cache may itself be below the
// machine's /tmp, which a pod does not see.
const podTools = "/tmp/.process-node-tools"

// ProcessKubelet is the kubelet of the process nodes.
type ProcessKubelet struct {
	client      kubernetes.Interface
	nodes       []string
	allocatable corev1.ResourceList
	dir, tools  string
	network     *podNetwork
	dns         *dnsServer
	server      *http.Server
	port        int
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup

	mu   sync.Mutex
	runs map[types.UID]*podRun
}

// StartProcessKubelet starts the kubelet of the nodes named, which exist
// already, with the resources allocatable, as the admin of kubeconfig: their
// pods' folders and logs go to dir; the endpoint that serves the logs uses
// the certificate and key in certFile and keyFile.
func StartProcessKubelet(kubeconfig, dir string, nodes []string, allocatable corev1.ResourceList, certFile, keyFile string) (p *ProcessKubelet, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the process nodes need root: they make network and mount namespaces, links and mounts")
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	config.QPS, config.Burst = 100, 200
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	tools, err := WriteTools()
	if err != nil {
		return nil, err
	}
	p = &ProcessKubelet{client: client, nodes: nodes, allocatable: allocatable, dir: dir, tools: tools, runs: map[types.UID]*podRun{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	if p.network, err = startPodNetwork(); err != nil {
		return nil, err
	}
	if p.dns, err = startDNS(client, p.network.namespace()); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	listener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return nil, err
	}
	p.port = listener.Addr().(*net.TCPAddr).Port
	p.server = &http.Server{Handler: http.HandlerFunc(p.serveLogs)}
	go p.server.Serve(listener)

	if err := p.heartbeat(); err != nil {
		return nil, err
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Second):
				p.heartbeat()
			}
		}
	}()
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.sync(obj) },
		UpdateFunc: func(_, obj any) { p.sync(obj) },
		DeleteFunc: p.gone,
	})
	factory.Start(p.ctx.Done())
	if !cache.WaitForCacheSync(p.ctx.Done(), pods.HasSynced) {
		return nil, errors.New("the process nodes could not list the pods")
	}
	return p, nil
}

// WriteTools writes the containers' tools (torchrun) to a folder of the
// user's cache, and returns it; each pod sees it at podTools, and the
// local runs of the tests put it first on PATH.
func WriteTools() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "torchwrap-generator", "process-nodes", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Another run may write it at the same time: write aside, then rename.
	tmp, err := os.CreateTemp(dir, ".torchrun-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(torchrun); err != nil {
		return "", err
	}
	if err := tmp.Chmod(0o755); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return dir, os.Rename(tmp.Name(), filepath.Join(dir, "torchrun"))
}

// Stop kills every container at once, takes the sandboxes and the network
// down, and stops serving logs; it returns the PIDs of the processes it
// ended (containers, and the holders of namespaces). The pods stay as they
// were reported.
func (p *ProcessKubelet) Stop() []int {
	p.cancel()
	p.mu.Lock()
	runs := slices.Collect(maps.Values(p.runs))
	p.mu.Unlock()
	var pids []int
	for _, r := range runs {
		pids = append(pids, r.pids()...)
		r.stop(0)
		<-r.done
	}
	p.wg.Wait()
	if p.server != nil {
		p.server.Close()
	}
	if p.dns != nil {
		p.dns.stop()
	}
	if p.network != nil {
		pids = append(pids, p.network.bridge.pid())
		p.network.stop()
	}
	return pids
}

// heartbeat reports the nodes Ready, with the address and port where their
// kubelet serves logs.
func (p *ProcessKubelet) heartbeat() error {
	now := metav1.Now()
	for _, name := range p.nodes {
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"the process nodes' kubelet runs","lastHeartbeatTime":%q}],`+
			`"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`,
			now.UTC().Format(time.RFC3339), p.port)
		if _, err := p.client.CoreV1().Nodes().PatchStatus(p.ctx, name, []byte(patch)); err != nil {
			return fmt.Errorf("reporting node %s Ready: %w", name, err)
		}
	}
	return nil
}

func (p *ProcessKubelet) ours(node string) bool { return slices.Contains(p.nodes, node) }

// sync starts a pod newly bound to a process node, and stops one being
// deleted.
func (p *ProcessKubelet) sync(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !p.ours(pod.Spec.NodeName) || p.ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	r := p.runs[pod.UID]
	if r == nil {
		if pod.DeletionTimestamp == nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
			// It ended before these nodes started.
			p.mu.Unlock()
			return
		}
		r = newPodRun(p, pod)
		p.runs[pod.UID] = r
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			r.run()
			p.finish(r)
		}()
	}
	p.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := time.Duration(0)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		r.stop(grace)
	}
}

// gone stops the run of a pod deleted at once (grace period 0).
func (p *ProcessKubelet) gone(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	p.mu.Lock()
	r := p.runs[pod.UID]
	p.mu.Unlock()
	if r != nil {
		r.stop(0)
	}
}

// finish deletes a pod whose run is over once it is being deleted; until
// then the run stays, for its logs.
func (p *ProcessKubelet) finish(r *podRun) {
	select {
	case <-r.stopping:
	case <-p.ctx.Done():
		return
	}
	if p.ctx.Err() != nil {
		return
	}
	zero, uid := int64(0), r.pod.UID
	err := p.client.CoreV1().Pods(r.pod.Namespace).Delete(p.ctx, r.pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		fmt.Fprintf(os.Stderr, "process nodes: deleting pod %s/%s: %v\n", r.pod.Namespace, r.pod.Name, err)
	}
	p.mu.Lock()
	delete(p.runs, r.pod.UID)
	p.mu.Unlock()
}

// run finds the run of a pod by its namespace and name: the newest, when a
// pod of that name was made again.
func (p *ProcessKubelet) run(namespace, name string) *podRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	var found *podRun
	for _, r := range p.runs {
		if r.pod.Namespace == namespace && r.pod.Name == name && (found == nil || r.pod.CreationTimestamp.After(found.pod.CreationTimestamp.Time)) {
			found = r
		}
	}
	return found
}

// serveLogs answers the API server's pods/log requests:
// /containerLogs/<namespace>/<pod>/<container>, with the messages a kubelet
// gives when there is no such log.
func (p *ProcessKubelet) serveLogs(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || !strings.HasPrefix(req.URL.Path, "/containerLogs/") {
		http.NotFound(w, req)
		return
	}
	namespace, name, container := parts[0], parts[1], parts[2]
	options, err := parseLogOptions(req.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r := p.run(namespace, name)
	if r == nil {
		http.Error(w, fmt.Sprintf("pod %q in namespace %q not found on this node", name, namespace), http.StatusNotFound)
		return
	}
	log, err := r.log(container, options.previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	if err := log.serve(req.Context(), w, options); err != nil {
		fmt.Fprintf(os.Stderr, "process nodes: serving the log of %s/%s %s: %v\n", namespace, name, container, err)
	}
}

// podRun is one pod on a process node, from its start until it is deleted.
type podRun struct {
	nodes *ProcessKubelet
	pod   *corev1.Pod
	dir   string

	mu         sync.Mutex
	sandbox    *sandbox
	phase      corev1.PodPhase
	started    metav1.Time
	initDone   bool
	containers []*containerRun // init containers first

	// stopping is closed when the pod is to stop; grace is how long its
	// processes have after SIGTERM.
	stopping chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	pushMu   sync.Mutex
}

// containerRun is a container of a pod: each of its runs' logs, and its
// state as a kubelet reports it.
type containerRun struct {
	spec     corev1.Container
	init     bool
	logs     []*containerLog
	cmd      *exec.Cmd
	state    corev1.ContainerState
	last     corev1.ContainerState
	ended    *corev1.ContainerStateTerminated
	restarts int32
}

func newPodRun(p *ProcessKubelet, pod *corev1.Pod) *podRun {
	r := &podRun{
		nodes: p, pod: pod.DeepCopy(), phase: corev1.PodPending,
		dir:      filepath.Join(p.dir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		stopping: make(chan struct{}), done: make(chan struct{}),
	}
	for _, c := range pod.Spec.InitContainers {
		r.containers = append(r.containers, &containerRun{spec: c, init: true,
			state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}})
	}
	for _, c := range pod.Spec.Containers {
		reason := "ContainerCreating"
		if len(pod.Spec.InitContainers) > 0 {
			reason = "PodInitializing"
		}
		r.containers = append(r.containers, &containerRun{spec: c,
			state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}})
	}
	return r
}

// stop makes the pod's processes stop: SIGTERM to each container's
// processes, SIGKILL after grace.
func (r *podRun) stop(grace time.Duration) {
	r.stopOnce.Do(func() {
		close(r.stopping)
		go func() {
			r.signal(syscall.SIGTERM)
			select {
			case <-r.done:
			case <-time.After(grace):
				r.signal(syscall.SIGKILL)
			}
		}()
	})
}

// signal sends a signal to every running container's process group.
func (r *podRun) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.containers {
		if c.cmd != nil && c.cmd.Process != nil && c.state.Running != nil {
			syscall.Kill(-c.cmd.Process.Pid, sig)
		}
	}
}

// pids are the processes of the pod: its sandbox's holder and its running
// containers.
func (r *podRun) pids() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pids []int
	if r.sandbox != nil {
		pids = append(pids, r.sandbox.holder.pid())
	}
	for _, c := range r.containers {
		if c.cmd != nil && c.state.Running != nil {
			pids = append(pids, c.cmd.Process.Pid)
		}
	}
	return pids
}

func (r *podRun) stopped() bool {
	select {
	case <-r.stopping:
		return true
	default:
		return false
	}
}

// pause waits for d, or until the pod stops; false when it stopped.
func (r *podRun) pause(d time.Duration) bool {
	select {
	case <-r.stopping:
		return false
	case <-time.After(d):
		return true
	}
}

// run runs the pod to its end, or until it is stopped.
func (r *podRun) run() {
	defer close(r.done)
	defer func() {
		if r.sandbox != nil {
			r.sandbox.stop()
		}
	}()
	if err := os.MkdirAll(filepath.Join(r.dir, "tmp"), 0o755); err != nil {
		r.event(corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error(), "")
		return
	}
	// The sandbox, as a kubelet keeps trying while a volume's source is
	// missing.
	for {
		sb, err := r.makeSandbox()
		if err == nil {
			r.mu.Lock()
			r.sandbox, r.started = sb, metav1.Now()
			r.mu.Unlock()
			break
		}
		r.event(corev1.EventTypeWarning, "FailedMount", err.Error(), "")
		if !r.pause(2 * time.Second) {
			return
		}
	}
	r.push()
	for _, c := range r.containers {
		if !c.init {
			continue
		}
		for {
			code, ok := r.runContainer(c)
			if !ok {
				return
			}
			if code == 0 {
				break
			}
			if r.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				r.end(corev1.PodFailed)
				return
			}
			if !r.backOff(c) {
				return
			}
		}
	}
	r.mu.Lock()
	r.initDone = true
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range r.containers {
		if c.init {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.keep(c)
		}()
	}
	wg.Wait()
	if r.stopped() {
		return
	}
	phase := corev1.PodSucceeded
	for _, c := range r.containers {
		if !c.init && (c.state.Terminated == nil || c.state.Terminated.ExitCode != 0) {
			phase = corev1.PodFailed
		}
	}
	r.end(phase)
}

// keep runs a container, and again as the restartPolicy says.
func (r *podRun) keep(c *containerRun) {
	for {
		code, ok := r.runContainer(c)
		if !ok {
			return
		}
		switch r.pod.Spec.RestartPolicy {
		case corev1.RestartPolicyNever:
			return
		case corev1.RestartPolicyOnFailure:
			if code == 0 {
				return
			}
		}
		if !r.backOff(c) {
			return
		}
	}
}

// backOff waits before a container starts again: 1 s after its first run,
// doubling up to 10 s; false when the pod stopped meanwhile.
func (r *podRun) backOff(c *containerRun) bool {
	delay := time.Second << min(len(c.logs)-1, 4)
	delay = min(delay, 10*time.Second)
	message := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.spec.Name, r.pod.Name, r.pod.Namespace, r.pod.UID)
	r.mu.Lock()
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: message}}
	r.mu.Unlock()
	r.push()
	r.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container "+c.spec.Name+" in pod "+r.pod.Name, c.spec.Name)
	return r.pause(delay)
}

// end reports the pod's final phase.
func (r *podRun) end(phase corev1.PodPhase) {
	r.mu.Lock()
	r.phase = phase
	r.mu.Unlock()
	r.push()
}

// runContainer runs a container once, and gives its exit code; false when
// the pod stopped before it could end on its own.
func (r *podRun) runContainer(c *containerRun) (int32, bool) {
	var cmd *exec.Cmd
	var log *containerLog
	var stdout, stderr *lineWriter
	for {
		if r.stopped() {
			return 0, false
		}
		var reason string
		var err error
		cmd, reason, err = r.command(c)
		if err == nil {
			log, err = newContainerLog(filepath.Join(r.dir, fmt.Sprintf("%s-%d.log", c.spec.Name, len(c.logs))))
			reason = "RunContainerError"
		}
		if err == nil {
			stdout, stderr = &lineWriter{log: log}, &lineWriter{log: log}
			cmd.Stdout, cmd.Stderr = stdout, stderr
			err = cmd.Start()
		}
		if err == nil {
			break
		}
		if log != nil {
			log.end()
		}
		r.mu.Lock()
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: err.Error()}}
		r.mu.Unlock()
		r.push()
		r.event(corev1.EventTypeWarning, "Failed", "Error: "+err.Error(), c.spec.Name)
		if !r.pause(2 * time.Second) {
			return 0, false
		}
	}
	r.mu.Lock()
	if len(c.logs) > 0 {
		c.restarts++
	}
	c.logs = append(c.logs, log)
	c.cmd = cmd
	if c.ended != nil {
		c.last = corev1.ContainerState{Terminated: c.ended}
	}
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	if !c.init {
		r.phase = corev1.PodRunning
	}
	r.mu.Unlock()
	r.push()
	r.event(corev1.EventTypeNormal, "Started", "Started container "+c.spec.Name, c.spec.Name)

	err := cmd.Wait()
	stdout.flush()
	stderr.flush()
	log.end()
	code := exitCode(cmd, err)
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	message := ""
	if code != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		message = log.terminationMessage()
	}
	r.mu.Lock()
	c.ended = &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, Message: message, StartedAt: c.state.Running.StartedAt, FinishedAt: metav1.Now(),
		ContainerID: fmt.Sprintf("process://%d", cmd.Process.Pid)}
	c.state = corev1.ContainerState{Terminated: c.ended}
	r.mu.Unlock()
	r.push()
	return code, !r.stopped()
}

// exitCode is a run's exit code as a container runtime reports it: 128 plus
// the signal for one a signal ended.
func exitCode(cmd *exec.Cmd, err error) int32 {
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 128
	}
	if status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return 128 + int32(status.Signal())
	}
	return int32(cmd.ProcessState.ExitCode())
}

// command is the command of a container's next run, with its environment;
// when it cannot be made, the reason a kubelet would give.
func (r *podRun) command(c *containerRun) (*exec.Cmd, string, error) {
	ctx, cancel := context.WithTimeout(r.nodes.ctx, 30*time.Second)
	defer cancel()
	r.mu.Lock()
	pod := r.pod.DeepCopy()
	pod.Status = r.status()
	r.mu.Unlock()
	env, err := local.ContainerEnv(ctx, r.nodes, pod, &c.spec, r.nodes.allocatable)
	if err != nil {
		return nil, "CreateContainerConfigError", err
	}
	if len(c.spec.Command) == 0 {
		return nil, "CreateContainerError", errors.New("the process nodes run a container's command, and this one has none (its image's entrypoint is not known here)")
	}
	var argv []string
	for _, word := range append(slices.Clone(c.spec.Command), c.spec.Args...) {
		argv = append(argv, local.Expand(word, env))
	}
	dir := c.spec.WorkingDir
	if dir == "" {
		dir = "/tmp"
	}
	base := map[string]string{"PATH": podTools + ":" + processPATH, "HOME": "/root", "HOSTNAME": r.hostname()}
	maps.Copy(base, env)
	cmd := r.sandbox.command(dir, argv)
	for _, name := range slices.Sorted(maps.Keys(base)) {
		cmd.Env = append(cmd.Env, name+"="+base[name])
	}
	return cmd, "", nil
}

// hostname is the pod's host name: spec.hostname, else its name.
func (r *podRun) hostname() string {
	if r.pod.Spec.Hostname != "" {
		return r.pod.Spec.Hostname
	}
	return r.pod.Name
}

// log is the log of a container's current run, or with previous, of the
// one before.
func (r *podRun) log(container string, previous bool) (*containerLog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.containers {
		if c.spec.Name != container {
			continue
		}
		switch {
		case previous && len(c.logs) < 2:
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, r.pod.Name)
		case previous:
			return c.logs[len(c.logs)-2], nil
		case len(c.logs) == 0:
			reason := ""
			if c.state.Waiting != nil {
				reason = c.state.Waiting.Reason
			}
			return nil, fmt.Errorf("container %q in pod %q is waiting to start: %s", container, r.pod.Name, reason)
		}
		return c.logs[len(c.logs)-1], nil
	}
	return nil, fmt.Errorf("container %s is not valid for pod %s", container, r.pod.Name)
}

// status is the pod's status as a kubelet reports it. r.mu is held.
func (r *podRun) status() corev1.PodStatus {
	s := corev1.PodStatus{Phase: r.phase, HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}}
	if r.sandbox != nil {
		s.PodIP = r.sandbox.ip.String()
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
		s.StartTime = &r.started
	}
	ready := r.phase == corev1.PodRunning
	for _, c := range r.containers {
		status := corev1.ContainerStatus{
			Name: c.spec.Name, Image: c.spec.Image, ImageID: c.spec.Image, RestartCount: c.restarts,
			State: c.state, LastTerminationState: c.last, Ready: c.state.Running != nil,
		}
		started := c.state.Running != nil
		status.Started = &started
		if c.init {
			status.Ready = c.state.Terminated != nil && c.state.Terminated.ExitCode == 0
			s.InitContainerStatuses = append(s.InitContainerStatuses, status)
			continue
		}
		ready = ready && status.Ready
		s.ContainerStatuses = append(s.ContainerStatuses, status)
	}
	condition := func(kind corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
		c := corev1.PodCondition{Type: kind, Status: corev1.ConditionFalse, Reason: reason}
		if ok {
			c.Status, c.Reason = corev1.ConditionTrue, ""
		}
		return c
	}
	notReady := "ContainersNotReady"
	if r.phase == corev1.PodSucceeded || r.phase == corev1.PodFailed {
		notReady = "PodCompleted"
	}
	s.Conditions = []corev1.PodCondition{
		condition(corev1.PodReadyToStartContainers, r.sandbox != nil, ""),
		condition(corev1.PodInitialized, r.initDone || len(r.pod.Spec.InitContainers) == 0, "ContainersNotInitialized"),
		condition(corev1.ContainersReady, ready, notReady),
		condition(corev1.PodReady, ready, notReady),
	}
	return s
}

// push writes the pod's status to the API server, keeping the conditions
// that others set (PodScheduled) and the times of those that did not change;
// as a kubelet's status manager does, it tries again every second until
// the API server takes it (it may be down for a while).
func (r *podRun) push() {
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	for said := false; r.nodes.ctx.Err() == nil; said = true {
		err := r.pushOnce()
		if err == nil || apierrors.IsNotFound(err) || r.nodes.ctx.Err() != nil {
			return
		}
		if !said {
			fmt.Fprintf(os.Stderr, "process nodes: status of pod %s/%s: %v; trying again\n", r.pod.Namespace, r.pod.Name, err)
		}
		select {
		case <-r.nodes.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// pushOnce writes the pod's status to the API server once.
func (r *podRun) pushOnce() error {
	pods := r.nodes.client.CoreV1().Pods(r.pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := pods.Get(r.nodes.ctx, r.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if current.UID != r.pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), r.pod.Name)
		}
		r.mu.Lock()
		status := r.status()
		r.mu.Unlock()
		now := metav1.Now()
		for i, c := range status.Conditions {
			status.Conditions[i].LastTransitionTime = now
			for _, old := range current.Status.Conditions {
				if old.Type == c.Type && old.Status == c.Status {
					status.Conditions[i].LastTransitionTime = old.LastTransitionTime
				}
			}
		}
		for _, old := range current.Status.Conditions {
			if !slices.ContainsFunc(status.Conditions, func(c corev1.PodCondition) bool { return c.Type == old.Type }) {
				status.Conditions = append(status.Conditions, old)
			}
		}
		current.Status = status
		_, err = pods.UpdateStatus(r.nodes.ctx, current, metav1.UpdateOptions{})
		return err
	})
}

// event records an event of the pod (of one of its containers, if named), as
// the kubelet does.
func (r *podRun) event(kind, reason, message, container string) {
	if r.nodes.ctx.Err() != nil {
		return
	}
	suffix := make([]byte, 8)
	rand.Read(suffix)
	now := metav1.Now()
	involved := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: r.pod.Namespace, Name: r.pod.Name, UID: r.pod.UID}
	if container != "" {
		involved.FieldPath = "spec.containers{" + container + "}"
	}
	_, err := r.nodes.client.CoreV1().Events(r.pod.Namespace).Create(r.nodes.ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: r.pod.Name + "." + hex.EncodeToString(suffix), Namespace: r.pod.Namespace},
		InvolvedObject: involved, Type: kind, Reason: reason, Message: message, Count: 1,
		Source:         corev1.EventSource{Component: "kubelet", Host: r.pod.Spec.NodeName},
		FirstTimestamp: now, LastTimestamp: now,
	}, metav1.CreateOptions{})
	if err != nil && r.nodes.ctx.Err() == nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		fmt.Fprintf(os.Stderr, "process nodes: event %s of pod %s/%s: %v\n", reason, r.pod.Namespace, r.pod.Name, err)
	}
}

// ConfigMap and Secret read a ConfigMap's or a Secret's data for local.ContainerEnv
// and the volumes.
func (p *ProcessKubelet) ConfigMap(ctx context.Context, namespace, name string) (map[string]string, error) {
	cm, err := p.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data := maps.Clone(cm.Data)
	if data == nil {
		data = map[string]string{}
	}
	for k, v := range cm.BinaryData {
		data[k] = string(v)
	}
	return data, nil
}

func (p *ProcessKubelet) Secret(ctx context.Context, namespace, name string) (map[string]string, error) {
	s, err := p.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	for k, v := range s.Data {
		data[k] = string(v)
	}
	return data, nil
}
