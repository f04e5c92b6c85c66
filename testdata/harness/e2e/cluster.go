//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/torchwrap/generator/testdata/harness/pinned"
)

// Binaries are the paths of the built programs.
type Binaries struct {
	Etcd, APIServer, Kubectl string
}

// Build builds etcd, kube-apiserver and kubectl from their wrapper module
// below the repository's testdata folder, or reuses them from the cache.
// logf reports progress.
func Build(testdata string, logf func(string, ...any)) (Binaries, error) {
	dir, err := pinned.KubeServer.Build(testdata, logf)
	if err != nil {
		return Binaries{}, err
	}
	return Binaries{
		Etcd:      filepath.Join(dir, "etcd"),
		APIServer: filepath.Join(dir, "kube-apiserver"),
		Kubectl:   filepath.Join(dir, "kubectl"),
	}, nil
}

// Cluster is a running etcd and kube-apiserver. Kubeconfig is the admin's
// kubeconfig file.
type Cluster struct {
	Kubeconfig string
	bins       Binaries
	dir        string
	server     string
	procs      []*process
	// The simulated cluster's process nodes, and the folder of their
	// programs.
	processNodes *ProcessKubelet
	programs     string
}

// process is a started program; done is closed once it has exited.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Researcher is a user with no rights of its own: it may do only what every
// authenticated user may (discovery, asking what it may do) and what
// RoleBindings grant it (the simulated cluster binds view to it in
// SimRBACNamespace).
const Researcher = "researcher"

// user is a user of the API server with a static bearer token, valid only for
// this throwaway server on loopback.
type user struct {
	name, token, groups string
}

// Admin is the user of Kubeconfig, in group system:masters: it may do
// anything, and the controllers of the simulated cluster run as it.
const Admin = "admin"

var admin = user{Admin, "e2e-admin-token", "system:masters"}

// users are the users in the API server's token file.
var users = []user{admin, {Researcher, "e2e-researcher-token", ""}}

// Start starts etcd and kube-apiserver with their data, keys and logs in dir,
// and waits until the API server is ready. On error, what was started is
// stopped.
func Start(bins Binaries, dir string) (c *Cluster, err error) {
	c = &Cluster{bins: bins, dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	if err := writeKeys(dir); err != nil {
		return nil, err
	}

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	// --unsafe-no-fsync: the data is thrown away.
	if err := c.start("etcd", nil, bins.Etcd, "--name=e2e", "--data-dir="+filepath.Join(dir, "etcd-data"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL, "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}
	// RBAC, as on a real cluster: the admin is in system:masters, and the
	// controllers of the simulated cluster run as the admin; another user
	// may do what roles grant it. No ServiceAccount admission: no
	// controller creates service accounts here. No endpoint reconciler:
	// 127.0.0.1 is not a valid Endpoints address.
	if err := c.start("kube-apiserver", nil, bins.APIServer,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		// Aggregated APIs (Kueue's visibility API), reached through the
		// front proxy's client certificate.
		"--requestheader-client-ca-file="+filepath.Join(dir, "front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+filepath.Join(dir, "front-proxy-client.crt"),
		"--proxy-client-key-file="+filepath.Join(dir, "front-proxy-client.key"),
		"--service-cluster-ip-range=10.0.0.0/24"); err != nil {
		return nil, err
	}
	c.server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	if err := c.waitURL("kube-apiserver", c.server+"/readyz", 2*time.Minute); err != nil {
		return nil, err
	}
	return c, c.writeKubeconfig(c.Kubeconfig, admin, "default")
}

// Server is the URL of the API server.
func (c *Cluster) Server() string { return c.server }

// KubeconfigFor writes a kubeconfig file for a user (Researcher, say),
// dir/kubeconfig-<user>, whose context has the namespace given (none if
// empty), and returns its path.
func (c *Cluster) KubeconfigFor(name, namespace string) (string, error) {
	for _, u := range users {
		if u.name == name {
			path := filepath.Join(c.dir, "kubeconfig-"+name)
			return path, c.writeKubeconfig(path, u, namespace)
		}
	}
	return "", fmt.Errorf("no user %q in the token file", name)
}

// writeKubeconfig writes a kubeconfig file for the user u, with the namespace
// in its context unless empty.
func (c *Cluster) writeKubeconfig(path string, u user, namespace string) error {
	return os.WriteFile(path, kubeconfig(kubeContext{name: "e2e", server: c.server, ca: c.caFile(), user: u, userName: u.name, namespace: namespace}), 0o600)
}

// caFile is the file of the API server's certificate, which its clients
// trust.
func (c *Cluster) caFile() string { return filepath.Join(c.dir, "certs", "apiserver.crt") }

// kubeContext is a context of a kubeconfig file: a cluster, named as the
// context, by its server and the certificate it trusts (a file, ca, or the
// certificate itself, caData), and a user, named userName in the file, with
// its token; and a namespace unless empty.
type kubeContext struct {
	name, server string
	ca           string
	caData       []byte
	user         user
	userName     string
	namespace    string
}

// kubeconfig is the text of a kubeconfig file with the contexts given, the
// first the current one.
func kubeconfig(contexts ...kubeContext) []byte {
	var clusters, users, named strings.Builder
	for _, k := range contexts {
		ca := "certificate-authority: " + k.ca
		if k.caData != nil {
			ca = "certificate-authority-data: " + base64.StdEncoding.EncodeToString(k.caData)
		}
		fmt.Fprintf(&clusters, "- name: %s\n  cluster:\n    server: %s\n    %s\n", k.name, k.server, ca)
		fmt.Fprintf(&users, "- name: %s\n  user:\n    token: %s\n", k.userName, k.user.token)
		context := fmt.Sprintf("{cluster: %s, user: %s}", k.name, k.userName)
		if k.namespace != "" {
			context = fmt.Sprintf("{cluster: %s, user: %s, namespace: %s}", k.name, k.userName, k.namespace)
		}
		fmt.Fprintf(&named, "- name: %s\n  context: %s\n", k.name, context)
	}
	return []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n%susers:\n%scontexts:\n%scurrent-context: %s\n",
		clusters.String(), users.String(), named.String(), contexts[0].name))
}

// start starts a program in its own process group, with env added to the
// environment; its output goes to dir/<name>.log. The process is killed if
// the test process dies.
func (c *Cluster) start(name string, env []string, path string, args ...string) error {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	p, err := c.run(name, cmd)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// run starts a program as start does; its log goes on after what the
// program of its name wrote before (a restart).
func (c *Cluster) run(name string, cmd *exec.Cmd) (*process, error) {
	log, err := os.OpenFile(filepath.Join(c.dir, name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// waitURL polls url, with the admin token, until it answers 200 OK; it fails
// early when a started process has exited.
func (c *Cluster) waitURL(what, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// Only to poll readiness; kubectl verifies the certificate.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, p := range c.procs {
			if p.exited() {
				return fmt.Errorf("%s exited: %s\n%s", p.name, p.cmd.ProcessState, c.logTail())
			}
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+admin.token)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %s\n%s", what, timeout, c.logTail())
}

func (c *Cluster) logTail() string {
	var b strings.Builder
	for _, p := range c.procs {
		data, _ := os.ReadFile(filepath.Join(c.dir, p.name+".log"))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- last lines of %s.log\n%s\n", p.name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// Stop stops the process nodes' pods and every process Start and StartSim
// started, the API server first, each with SIGTERM to its process group and,
// after 10 seconds, SIGKILL. It waits for each to exit and returns the PIDs
// it stopped.
func (c *Cluster) Stop() []int {
	var pids []int
	if c.processNodes != nil {
		pids = c.processNodes.Stop()
		c.processNodes = nil
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		pid := p.cmd.Process.Pid
		pids = append(pids, pid)
		syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-p.done
		}
	}
	c.procs = nil
	return pids
}

// Running lists the PIDs of the processes that have not exited.
func (c *Cluster) Running() []int {
	var pids []int
	for _, p := range c.procs {
		if !p.exited() {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
}

// Kubectl runs the built kubectl against the cluster as the admin, with stdin
// as its standard input. It never uses a kubectl found on the machine.
func (c *Cluster) Kubectl(stdin []byte, args ...string) (string, error) {
	return c.KubectlWith(c.Kubeconfig, stdin, args...)
}

// KubectlWith runs the built kubectl with a kubeconfig file, as Kubectl does.
func (c *Cluster) KubectlWith(kubeconfig string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command(c.bins.Kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeKeys writes the service-account signing key pair, the token file of
// the users, and the front proxy's CA and client certificate (frontProxy).
func writeKeys(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	var tokens strings.Builder
	for _, u := range users {
		// token, name, uid and, if any, groups
		fmt.Fprintf(&tokens, "%s,%s,%s-uid", u.token, u.name, u.name)
		if u.groups != "" {
			fmt.Fprintf(&tokens, ",%s", u.groups)
		}
		tokens.WriteString("\n")
	}
	proxyCA, proxyCert, proxyKey, err := frontProxy()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"sa.key":                 pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":                 pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv":             []byte(tokens.String()),
		"front-proxy-ca.crt":     proxyCA,
		"front-proxy-client.crt": proxyCert,
		"front-proxy-client.key": proxyKey,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// frontProxy makes the certificates with which the API server passes
// requests on to an aggregated API (the simulated cluster's Kueue serves its
// visibility API so): a CA, which the aggregated API server trusts for the
// user its requests name (it reads it from the ConfigMap
// extension-apiserver-authentication), and the API server's client
// certificate, front-proxy-client, signed by it. PEM: the CA's certificate,
// the client's certificate and key.
func frontProxy() (ca, cert, key []byte, err error) {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	clientKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, nil, err
	}
	clientTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "front-proxy-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTemplate, caTemplate, &clientKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientDER}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(clientKey)}), nil
}
