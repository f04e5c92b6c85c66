//go:build linux

package e2e

// The DNS server of the process nodes' pods, as a cluster's DNS (CoreDNS's
// kubernetes plugin) answers them, from the API server at each question:
//
//   - <service>.<namespace>.svc.cluster.local: a headless Service's ready
//     endpoints (none: no such name yet) (from its EndpointSlices, which kube-controller-manager
//     makes from the pods' addresses; ready when the pod is, or always when
//     the Service publishes addresses that are not ready); another
//     Service's cluster IP (which nothing here routes: no kube-proxy runs);
//   - <hostname>.<service>.<namespace>.svc.cluster.local: the endpoint of
//     that host name, a pod whose hostname and subdomain say so (JobSet's
//     pods);
//
// and no other name (NXDOMAIN, so that a resolver tries its next search
// domain): nothing outside the cluster is reachable from the pods. It
// answers A questions over UDP; AAAA questions get no address.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const clusterDomain = "cluster.local"

// dnsServer answers the pods' questions.
type dnsServer struct {
	client kubernetes.Interface
	conn   net.PacketConn
}

// startDNS listens on the bridge's address in the pod network's namespace
// (whose path is netns), and answers until stop.
func startDNS(client kubernetes.Interface, netns string) (*dnsServer, error) {
	conn, err := listenIn(netns, "udp4", net.JoinHostPort(podBridgeIP.String(), "53"))
	if err != nil {
		return nil, err
	}
	s := &dnsServer{client: client, conn: conn}
	go s.serve()
	return s, nil
}

func (s *dnsServer) stop() { s.conn.Close() }

// listenIn opens a socket in the network namespace at the path netns: a
// thread of this process enters it, opens the socket, which stays in that
// namespace, and goes back to its own. (Were the thread to end instead, the
// programs it started would get their parent-death signal.)
func listenIn(netns, network, address string) (net.PacketConn, error) {
	type result struct {
		conn net.PacketConn
		err  error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer own.Close()
		target, err := os.Open(netns)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		conn, err := net.ListenPacket(network, address)
		if back := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); back != nil {
			// The thread stays locked, and ends with this goroutine.
			done <- result{conn, errors.Join(err, fmt.Errorf("back to this process's network namespace: %w", back))}
			return
		}
		runtime.UnlockOSThread()
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}

func (s *dnsServer) serve() {
	buf := make([]byte, 512)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if answer, ok := s.answer(buf[:n]); ok {
			s.conn.WriteTo(answer, from)
		}
	}
}

// answer is the reply to a question; false when the message is not one.
func (s *dnsServer) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	header, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	reply := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: header.ID, Response: true, Authoritative: true, RecursionDesired: header.RecursionDesired},
		Questions: []dnsmessage.Question{q},
	}
	ips, rcode := s.lookup(strings.ToLower(strings.TrimSuffix(q.Name.String(), ".")))
	reply.RCode = rcode
	if rcode == dnsmessage.RCodeSuccess && q.Type == dnsmessage.TypeA {
		for _, ip := range ips {
			var a [4]byte
			copy(a[:], ip.To4())
			reply.Answers = append(reply.Answers, dnsmessage.Resource{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
				Body:   &dnsmessage.AResource{A: a},
			})
		}
	}
	out, err := reply.Pack()
	return out, err == nil
}

// lookup finds the addresses of a name: RCodeNameError when there is no
// such name, RCodeServerFailure when the API server did not answer.
func (s *dnsServer) lookup(name string) ([]net.IP, dnsmessage.RCode) {
	rest, ok := strings.CutSuffix(name, ".svc."+clusterDomain)
	if !ok {
		return nil, dnsmessage.RCodeNameError
	}
	parts := strings.Split(rest, ".")
	var host, service, namespace string
	switch len(parts) {
	case 2:
		service, namespace = parts[0], parts[1]
	case 3:
		host, service, namespace = parts[0], parts[1], parts[2]
	default:
		return nil, dnsmessage.RCodeNameError
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	svc, err := s.client.CoreV1().Services(namespace).Get(ctx, service, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, dnsmessage.RCodeNameError
	case err != nil:
		return nil, dnsmessage.RCodeServerFailure
	case svc.Spec.ClusterIP != corev1.ClusterIPNone && host != "":
		return nil, dnsmessage.RCodeNameError
	case svc.Spec.ClusterIP != corev1.ClusterIPNone:
		return []net.IP{net.ParseIP(svc.Spec.ClusterIP)}, dnsmessage.RCodeSuccess
	}
	slices, err := s.client.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + service,
	})
	if err != nil {
		return nil, dnsmessage.RCodeServerFailure
	}
	var ips []net.IP
	for _, slice := range slices.Items {
		for _, e := range slice.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready || svc.Spec.PublishNotReadyAddresses
			named := e.Hostname != nil && *e.Hostname == host
			if !ready || (host != "" && !named) {
				continue
			}
			for _, a := range e.Addresses {
				ips = append(ips, net.ParseIP(a))
			}
		}
	}
	// As CoreDNS: a name without a ready address is no name (yet).
	if len(ips) == 0 {
		return nil, dnsmessage.RCodeNameError
	}
	return ips, dnsmessage.RCodeSuccess
}
