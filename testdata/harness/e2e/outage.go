//go:build linux

package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The cluster's hiccups, as a follower meets them: its API server killed
// and started again, its API server stopped (SIGSTOP) for a while, and a
// connection that stops carrying bytes without closing (Proxy).

// RestartAPIServer kills the API server (SIGKILL: a crash, a node lost),
// waits down, starts it again with the same flags, on the same port, and
// waits until it is ready.
func (c *Cluster) RestartAPIServer(down time.Duration) error {
	i, p := c.process("kube-apiserver")
	if p == nil {
		return fmt.Errorf("no kube-apiserver runs")
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	time.Sleep(down)
	cmd := exec.Command(p.cmd.Path, p.cmd.Args[1:]...)
	cmd.Env = p.cmd.Env
	again, err := c.run(p.name, cmd)
	if err != nil {
		return err
	}
	c.procs[i] = again
	return c.waitURL("kube-apiserver", c.server+"/readyz", 2*time.Minute)
}

// PauseAPIServer stops the API server's processes (SIGSTOP) for a while,
// then lets them go on (SIGCONT): it hangs, answering nothing, closing
// nothing.
func (c *Cluster) PauseAPIServer(d time.Duration) error {
	_, p := c.process("kube-apiserver")
	if p == nil {
		return fmt.Errorf("no kube-apiserver runs")
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		return err
	}
	time.Sleep(d)
	return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
}

// process is the started program of a name, and its place in c.procs.
func (c *Cluster) process(name string) (int, *process) {
	for i, p := range c.procs {
		if p.name == name {
			return i, p
		}
	}
	return -1, nil
}

// Proxy is a TCP proxy on loopback in front of the API server, whose
// connections Hold can stop carrying bytes, without closing them: a NAT
// that dropped the flow, a laptop that slept. Kubeconfig reaches the API
// server through it, as the admin.
type Proxy struct {
	Kubeconfig string
	listener   net.Listener
	mu         sync.Mutex
	held       chan struct{} // closed while bytes flow
	conns      []net.Conn
}

// StartProxy starts a proxy in front of c's API server, and writes its
// kubeconfig (kubeconfig-proxy in c's folder).
func (c *Cluster) StartProxy() (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	flowing := make(chan struct{})
	close(flowing)
	p := &Proxy{Kubeconfig: filepath.Join(c.dir, "kubeconfig-proxy"), listener: l, held: flowing}
	_, port, _ := net.SplitHostPort(c.server[len("https://"):])
	target := "127.0.0.1:" + port
	server := "https://" + l.Addr().String()
	if err := os.WriteFile(p.Kubeconfig, kubeconfig(kubeContext{name: "e2e", server: server, ca: c.caFile(), user: admin, userName: admin.name, namespace: "default"}), 0o600); err != nil {
		l.Close()
		return nil, err
	}
	go p.serve(target)
	return p, nil
}

func (p *Proxy) serve(target string) {
	for {
		in, err := p.listener.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// pipe copies from one end to the other, waiting while the proxy holds.
func (p *Proxy) pipe(from, to net.Conn) {
	defer to.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := from.Read(buf)
		p.mu.Lock()
		flowing := p.held
		p.mu.Unlock()
		<-flowing
		if n > 0 {
			if _, err := to.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				from.Close()
			}
			return
		}
	}
}

// Hold stops every connection of the proxy, and those it accepts
// meanwhile, from carrying bytes for a while, then lets them flow again.
func (p *Proxy) Hold(d time.Duration) {
	p.mu.Lock()
	p.held = make(chan struct{})
	held := p.held
	p.mu.Unlock()
	time.Sleep(d)
	close(held)
}

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	p.listener.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
