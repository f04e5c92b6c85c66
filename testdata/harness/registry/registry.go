// Package registry starts a real OCI registry for the harness's tests: the
// CNCF distribution registry that testdata/registry pins, on 127.0.0.1, with
// TLS (a certificate authority and a server certificate made for the test)
// and basic authentication (htpasswd, bcrypt), as registries run, storing
// in a temporary folder. It stops at the test's cleanup.
package registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Registry is a running registry.
type Registry struct {
	// Host is its address, 127.0.0.1:PORT, as helm registry login takes
	// it and oci://HOST/... references name it.
	Host string
	// CAFile is the PEM file of the certificate authority that signed the
	// registry's certificate (for 127.0.0.1 and localhost): helm's
	// --ca-file.
	CAFile string
	// User and Password are the one account of its htpasswd file.
	User, Password string
	// Log is the file that holds the registry's output.
	Log string
}

var binary struct {
	sync.Once
	path string
	err  error
}

// Start builds the registry command from the wrapper module below testdata
// (the repository's testdata folder), or finds it built, and starts a
// registry of its own for t, which stops at t's cleanup. It returns once
// the registry answers /v2/ with 401, as an empty registry with basic
// authentication does.
func Start(t testing.TB, testdata string) *Registry {
	t.Helper()
	binary.Do(func() { binary.path, binary.err = Binary(testdata, t.Logf) })
	if binary.err != nil {
		t.Fatalf("building the registry from testdata/registry: %v", binary.err)
	}
	dir := t.TempDir()
	r := &Registry{User: "torchwrap", Password: randomHex(t, 16), Log: filepath.Join(dir, "registry.log")}
	var err error
	r.CAFile, err = writeCertificates(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The registry checks the password of every request: the lowest cost
	// keeps that quick, and the test's password is random and short-lived.
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The port is free when it is chosen, and could be taken before the
	// registry listens on it: then the registry exits, and Start tries
	// another.
	for attempt := 1; ; attempt++ {
		err := r.start(t, dir)
		if err == nil {
			return r
		}
		if attempt == 3 || !errors.Is(err, errExited) {
			t.Fatalf("starting the registry: %v\n%s", err, readLog(r.Log))
		}
		t.Logf("starting the registry: %v; trying another port", err)
	}
}

var errExited = errors.New("the registry exited")

// start starts the registry on a free port with the files of dir, and waits
// for it.
func (r *Registry) start(t testing.TB, dir string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	r.Host = fmt.Sprintf("127.0.0.1:%d", port)
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, []byte(configFile(dir, r.Host, randomHex(t, 16))), 0o600); err != nil {
		return err
	}
	log, err := os.OpenFile(r.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(binary.path, "serve", config)
	cmd.Stdout, cmd.Stderr = log, log
	// No traces: the registry exports OpenTelemetry traces to a collector
	// on localhost by default.
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none")
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	client, err := r.client()
	if err != nil {
		stop()
		return err
	}
	// A registry on loopback is up in well under a second; the deadline is
	// for a registry that never comes up, not a measure of anything.
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("%w before it answered: %v", errExited, err)
		default:
		}
		status, err := get(client, "https://"+r.Host+"/v2/")
		if err == nil && status == http.StatusUnauthorized {
			break
		}
		if err == nil {
			stop()
			return fmt.Errorf("GET /v2/ without credentials answered %d, not 401", status)
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("no answer from https://%s/v2/ in a minute: %v", r.Host, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("the registry's log (%s):\n%s", r.Log, readLog(r.Log))
		}
	})
	return nil
}

// configFile is the registry's configuration: storage in dir, TLS with the
// certificate of writeCertificates, basic authentication with dir's
// htpasswd file.
func configFile(dir, addr, secret string) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: %[1]s/storage
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %[2]s
  secret: %[3]s
  tls:
    certificate: %[1]s/server.crt
    key: %[1]s/server.key
auth:
  htpasswd:
    realm: torchwrap-test
    path: %[1]s/htpasswd
`, dir, addr, secret)
}

// client is an HTTPS client that trusts the registry's authority.
func (r *Registry) client() (*http.Client, error) {
	pem, err := os.ReadFile(r.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no certificate in " + r.CAFile)
	}
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		Timeout:   10 * time.Second,
	}, nil
}

// Get is the status of a GET of path (/v2/...) on the registry, without
// credentials.
func (r *Registry) Get(path string) (int, error) {
	client, err := r.client()
	if err != nil {
		return 0, err
	}
	return get(client, "https://"+r.Host+path)
}

func get(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// writeCertificates writes a certificate authority (ca.crt) and a server
// certificate it signs for 127.0.0.1 and localhost (server.crt,
// server.key) in dir, and returns the authority's file.
func writeCertificates(dir string) (string, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "torchwrap test registry CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	server := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, server, ca, &serverKey.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(serverKey)
	if err != nil {
		return "", err
	}
	files := []struct {
		name, kind string
		der        []byte
	}{
		{"ca.crt", "CERTIFICATE", caDER},
		{"server.crt", "CERTIFICATE", serverDER},
		{"server.key", "EC PRIVATE KEY", keyDER},
	}
	for _, f := range files {
		data := pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der})
		if err := os.WriteFile(filepath.Join(dir, f.name), data, 0o600); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "ca.crt"), nil
}

// freePort is a TCP port of 127.0.0.1 that nothing listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func readLog(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(data))
}
