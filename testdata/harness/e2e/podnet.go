//go:build linux

package e2e

// The network of the pods of the process nodes (see processnodes.go), as a
// kubelet's network plugin would give it: each pod in a network namespace of
// its own, with an address of its own on a bridge, so that two pods may
// listen on the same port; the bridge in a network namespace of its own too,
// so that nothing of this machine's own network changes and nothing outside
// the machine (nor the machine itself) reaches the pods. The DNS server the
// pods ask (dns.go) listens on the bridge's address.
//
// Namespaces are held by sleeping processes (unshare ... sleep), the way a
// pause container holds a pod's; they go when those processes are killed.
// Everything is done with util-linux's unshare and nsenter and iproute2's ip,
// as root.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The pods' network: 10.89.0.0/16, the bridge (and DNS) at 10.89.0.1. Not
// the 10.244.0.0/16 of the fake nodes' pods, whose addresses kwok makes up.
const (
	podBridge    = "twsim0"
	podPrefixLen = 16
)

var (
	podBridgeIP = net.IPv4(10, 89, 0, 1).To4()
	// podIPs is the number of pod addresses: 10.89.0.2 to 10.89.255.254.
	podIPs = 1<<(32-podPrefixLen) - 3
)

// holder is a process that holds namespaces: unshare with the flags given,
// running sleep once the namespaces are made.
type holder struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startHolder starts a holder in new namespaces (unshare's flags, such as
// --net), and returns once they exist. It dies with this process.
func startHolder(flags ...string) (*holder, error) {
	args := append(flags, "--", "sh", "-c", "echo ready && exec sleep infinity")
	cmd := exec.Command("unshare", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("unshare %s: %w", strings.Join(flags, " "), err)
	}
	h := &holder{cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(h.done)
	}()
	// The line comes once unshare has made the namespaces.
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		h.kill()
		return nil, fmt.Errorf("unshare %s: %v %s", strings.Join(flags, " "), err, stderr.String())
	}
	return h, nil
}

func (h *holder) pid() int { return h.cmd.Process.Pid }

// kill ends the holder, and so its namespaces once nothing else is in them.
func (h *holder) kill() {
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	<-h.done
}

// enter runs a command in the namespaces of the holder that nsenter's flags
// name (-n, -m, -u).
func (h *holder) enter(flags []string, args ...string) error {
	all := append([]string{"-t", strconv.Itoa(h.pid())}, flags...)
	out, err := exec.Command("nsenter", append(append(all, "--"), args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nsenter %s: %v: %s", strings.Join(append(all, args...), " "), err, out)
	}
	return nil
}

// podNetwork is the bridge the pods are on, in a network namespace of its
// own, and the addresses it gives out.
type podNetwork struct {
	bridge *holder
	mu     sync.Mutex
	given  int
}

// startPodNetwork makes the bridge's network namespace and the bridge.
func startPodNetwork() (*podNetwork, error) {
	bridge, err := startHolder("--net")
	if err != nil {
		return nil, err
	}
	script := fmt.Sprintf("ip link set lo up && ip link add %[1]s type bridge && ip addr add %[2]s/%[3]d dev %[1]s && ip link set %[1]s up",
		podBridge, podBridgeIP, podPrefixLen)
	if err := bridge.enter([]string{"-n"}, "sh", "-c", script); err != nil {
		bridge.kill()
		return nil, err
	}
	return &podNetwork{bridge: bridge}, nil
}

// namespace is the path of the bridge's network namespace.
func (n *podNetwork) namespace() string {
	return fmt.Sprintf("/proc/%d/ns/net", n.bridge.pid())
}

func (n *podNetwork) stop() { n.bridge.kill() }

// address gives the next pod address, and a number that names its link.
func (n *podNetwork) address() (net.IP, int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.given == podIPs {
		return nil, 0, fmt.Errorf("the pod network %s/%d has no address left", podBridgeIP, podPrefixLen)
	}
	n.given++
	host := n.given + 1
	return net.IPv4(10, 89, byte(host>>8), byte(host)).To4(), n.given, nil
}

// mount is one mount of a pod's mount namespace: a folder or file bound at
// target, or a tmpfs there (memory, with its size limit in bytes, 0 for
// none). The target is a path as the pod sees it, or with onHost, a path of
// this machine (where a memory volume is mounted once, before it is bound
// where the containers want it).
type mount struct {
	source, target string
	memory         bool
	limit          int64
	readOnly       bool
	onHost         bool
}

// sandbox is a pod's namespaces: network (its own address on the bridge),
// mount (its own /etc/hosts, /etc/resolv.conf, /etc/hostname, /tmp and
// volumes) and UTS (its host name).
type sandbox struct {
	holder *holder
	ip     net.IP
}

// newSandbox makes a pod's namespaces: the address ip on the bridge (with
// the link number address gave with it), the host name, and the mounts, in
// order; tmp, a folder of this machine, becomes the pod's /tmp last, with
// what was mounted below it. A mount whose target is below /tmp is made at
// its place in tmp; any other target must exist on this machine.
func (n *podNetwork) newSandbox(ip net.IP, link int, hostname, tmp string, mounts []mount) (*sandbox, error) {
	h, err := startHolder("--net", "--mount", "--uts", "--propagation", "private")
	if err != nil {
		return nil, err
	}
	veth := fmt.Sprintf("twp%d", link)
	script := fmt.Sprintf("ip link add %[1]s type veth peer name eth0 netns %[2]d && ip link set %[1]s master %[3]s up",
		veth, h.pid(), podBridge)
	if err := n.bridge.enter([]string{"-n"}, "sh", "-c", script); err != nil {
		h.kill()
		return nil, err
	}
	lines := []string{
		"set -e",
		fmt.Sprintf("ip addr add %s/%d dev eth0", ip, podPrefixLen),
		"ip link set eth0 up",
		"ip link set lo up",
		"hostname " + shellQuote(hostname),
	}
	for _, m := range mounts {
		target := m.target
		if rest, below := strings.CutPrefix(target, "/tmp/"); below && !m.onHost {
			target = filepath.Join(tmp, rest)
			if err := os.MkdirAll(target, 0o755); err != nil {
				h.kill()
				return nil, err
			}
		} else if _, err := os.Stat(target); err != nil {
			h.kill()
			return nil, fmt.Errorf("mount point %s: %v; the process nodes make mount points only below /tmp, which is the pod's own", m.target, err)
		}
		if m.memory {
			size := ""
			if m.limit > 0 {
				size = fmt.Sprintf("-o size=%d ", m.limit)
			}
			lines = append(lines, fmt.Sprintf("mount -t tmpfs %stmpfs %s", size, shellQuote(target)))
		} else {
			lines = append(lines, fmt.Sprintf("mount --bind %s %s", shellQuote(m.source), shellQuote(target)))
		}
		if m.readOnly {
			lines = append(lines, "mount -o remount,bind,ro "+shellQuote(target))
		}
	}
	lines = append(lines, fmt.Sprintf("mount --rbind %s /tmp", shellQuote(tmp)))
	if err := h.enter([]string{"-n", "-m", "-u"}, "sh", "-c", strings.Join(lines, "\n")); err != nil {
		h.kill()
		return nil, err
	}
	return &sandbox{holder: h, ip: ip}, nil
}

// command runs a container's program in the pod's namespaces, in a PID
// namespace of its own whose processes all die with it (unshare
// --kill-child), from the folder dir as the pod's mounts show it (--wdns:
// --wd would open it before entering them, in this machine's files). Signals
// to the command's process group reach the program and its children; unshare
// passes the program's exit status on.
func (s *sandbox) command(dir string, argv []string) *exec.Cmd {
	args := []string{"-t", strconv.Itoa(s.holder.pid()), "-n", "-m", "-u", "--wdns=" + dir, "--",
		"unshare", "--pid", "--fork", "--kill-child", "--"}
	cmd := exec.Command("nsenter", append(args, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (s *sandbox) stop() { s.holder.kill() }

// shellQuote quotes a word for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
