// Package cluster talks to a live cluster about the jobs the generator
// makes: submits them (Submit), and follows them after: Status, Follow,
// Logs, List, Stop and Resume, Delete. What the generator knows of each
// kind of job is in one table (kinds.go). Whether a job can run there
// before it is submitted is pkg/cluster/preflight's.
package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
	"github.com/torchwrap/generator/pkg/failure"
)

// FieldManager is the name the generator's changes go under in an object's
// managedFields (server-side apply).
const FieldManager = "torchwrap-generator"

// Flags are kubectl's flags for reaching a cluster (--kubeconfig, --context,
// -n/--namespace, --as, --request-timeout, ...), read by client-go's own
// loader: KUBECONFIG and ~/.kube/config as kubectl reads them; and how to
// reach the worker clusters of a MultiKueue manager (--worker, -v).
type Flags struct {
	rules     *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
	// workers map worker clusters to contexts; verbose says which
	// context reaches each.
	workers map[string]string
	verbose bool
}

// Register adds the flags to a command's flag set.
func (f *Flags) Register(flags *pflag.FlagSet) {
	f.rules = clientcmd.NewDefaultClientConfigLoadingRules()
	flags.StringVar(&f.rules.ExplicitPath, "kubeconfig", "", "the kubeconfig file to use (default: KUBECONFIG, else ~/.kube/config)")
	clientcmd.BindOverrideFlags(&f.overrides, flags, clientcmd.RecommendedConfigOverrideFlags(""))
	flags.StringToStringVar(&f.workers, "worker", nil, "the kubeconfig context of a MultiKueue worker cluster, as `WORKER=CONTEXT` (repeat it for more; without it: the config file's workers, else the context named as the worker, else the one of its server)")
	// No "(default [])" in the help: an empty map is no mapping, not a value.
	flags.Lookup("worker").DefValue = ""
	flags.BoolVarP(&f.verbose, "verbose", "v", false, "say which kubeconfig context reaches each MultiKueue worker cluster")
}

// Namespace is the namespace that -n gives, or "".
func (f *Flags) Namespace() string { return f.overrides.Context.Namespace }

// Client talks to one cluster.
type Client struct {
	// kueueVersion is the version of Kueue's API read, found once ("" until
	// then).
	mu           sync.Mutex
	kueueVersion string
	// found are the jobs Find found, by Ref, which the next reading of
	// each takes instead of asking the cluster again.
	found map[Ref]*unstructured.Unstructured

	Dynamic dynamic.Interface
	// Watches is the dynamic client of watches: without the client's
	// timeout, since a watch lasts minutes (until the API server ends it,
	// as podwatch asks), and a connection that dies meanwhile is closed
	// by HTTP/2's pings.
	Watches   dynamic.Interface
	Discovery discovery.ServerResourcesInterfaceWithContext
	// LogSource reads the logs of pods; PodSource lists and watches pods;
	// ObjectSource lists the jobs and their Workloads.
	LogSource    podwatch.LogSource
	PodSource    PodSource
	ObjectSource ObjectSource
	// Namespace is the namespace of -n, else of the kubeconfig's context,
	// else default.
	Namespace string
	// Server is the API server's address, for messages.
	Server string
	// Poll is the least time between two readings of a followed job
	// (Follow, Logs with Follow), which its watches' changes wake; 0 is
	// half a second.
	Poll time.Duration
	// DeletionWait is how long Delete (and Submit, of a job of the same
	// name) waits for a deleted job to be gone; 0 is DefaultDeletionWait.
	DeletionWait time.Duration
	// Outage is how long a follower (Follow, Logs with Follow) goes on
	// through a cluster that cannot be reached; 0 is DefaultOutage.
	Outage time.Duration
	// Keeper keeps the failures that Follow, Logs and Status see, for
	// Status to tell after the pods are gone; nil keeps nothing.
	Keeper *failure.Keeper
	// Workers reach the worker clusters of a MultiKueue manager; nil
	// reaches none.
	Workers Workers
}

// gap is the least time between two readings of a followed job: the
// changes of a thousand pods that start at once come in a few readings,
// not a thousand.
func (c *Client) gap() time.Duration {
	if c.Poll == 0 {
		return 500 * time.Millisecond
	}
	return c.Poll
}

func (c *Client) outage() time.Duration {
	if c.Outage == 0 {
		return DefaultOutage
	}
	return c.Outage
}

// Connect reads the kubeconfig as kubectl does and makes the clients. It does
// not talk to the cluster yet. What the API server warns of goes to warnings,
// each warning once, as kubectl writes them.
func (f *Flags) Connect(userAgent string, warnings io.Writer) (*Client, error) {
	if path := f.rules.ExplicitPath; path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, BadFlag{Err: fmt.Errorf("--kubeconfig %s: %w", path, errors.Unwrap(err))}
		}
	}
	if f.overrides.CurrentContext != "" || len(f.workers) > 0 {
		raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.rules, &f.overrides).RawConfig()
		missing := func(context string) bool {
			_, ok := raw.Contexts[context]
			return err == nil && !ok
		}
		if name := f.overrides.CurrentContext; name != "" && missing(name) {
			return nil, BadFlag{Err: fmt.Errorf("--context %s: the kubeconfig has no such context; it has: %s", name, contextNames(raw))}
		}
		for _, worker := range slices.Sorted(maps.Keys(f.workers)) {
			if context := f.workers[worker]; missing(context) {
				return nil, BadFlag{Err: fmt.Errorf("--worker %s=%s: the kubeconfig has no context %s; it has: %s", worker, context, context, contextNames(raw))}
			}
		}
	}
	client, err := f.client(&f.overrides, userAgent, warnings)
	if err != nil {
		return nil, err
	}
	// Without a config folder (no HOME), the mapping is the flags'.
	file, _ := ConfigFile()
	workers := &kubeconfigWorkers{mapping: f.workers, configFile: file,
		kubeconfig: func() (clientcmdapi.Config, error) {
			return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.rules, &clientcmd.ConfigOverrides{}).RawConfig()
		},
		dial: func(context string) (*Client, error) {
			return f.client(f.workerOverrides(context), userAgent, warnings)
		},
	}
	if f.verbose {
		workers.verbose = warnings
	}
	client.Workers = workers
	return client, nil
}

// Namespaces are the namespaces the kubeconfig names for the cluster and
// the user of the current context: current (the client's: -n, else the
// context's) first, then those of its other contexts with the same cluster
// and user, in the order of their names.
func (f *Flags) Namespaces(current string) []string {
	namespaces := []string{current}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.rules, &f.overrides).RawConfig()
	if err != nil {
		return namespaces
	}
	name := cmp.Or(f.overrides.CurrentContext, raw.CurrentContext)
	here, ok := raw.Contexts[name]
	if !ok {
		return namespaces
	}
	for _, name := range slices.Sorted(maps.Keys(raw.Contexts)) {
		c := raw.Contexts[name]
		if c.Cluster == here.Cluster && c.AuthInfo == here.AuthInfo && c.Namespace != "" && !slices.Contains(namespaces, c.Namespace) {
			namespaces = append(namespaces, c.Namespace)
		}
	}
	return namespaces
}

// workerOverrides are what reaches a worker cluster by its context: of the
// flags, only those that are not about the manager's cluster (who to act
// as, how long to wait).
func (f *Flags) workerOverrides(context string) *clientcmd.ConfigOverrides {
	o := f.overrides.AuthInfo
	return &clientcmd.ConfigOverrides{CurrentContext: context, Timeout: f.overrides.Timeout,
		AuthInfo: clientcmdapi.AuthInfo{Impersonate: o.Impersonate, ImpersonateUID: o.ImpersonateUID, ImpersonateGroups: o.ImpersonateGroups}}
}

// client makes the clients of the cluster the kubeconfig and the overrides
// give.
func (f *Flags) client(overrides *clientcmd.ConfigOverrides, userAgent string, warnings io.Writer) (*Client, error) {
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.rules, overrides)
	rest, err := config.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, Unreachable{Err: errors.New("no cluster to talk to: no kubeconfig was found (KUBECONFIG, ~/.kube/config); pass --kubeconfig FILE, or set KUBECONFIG")}
	}
	if err != nil {
		return nil, Unreachable{Err: fmt.Errorf("reading the kubeconfig: %w", err)}
	}
	namespace, _, err := config.Namespace()
	if err != nil {
		return nil, Unreachable{Err: fmt.Errorf("reading the kubeconfig: %w", err)}
	}
	rest.UserAgent = userAgent
	log, err := apiLog()
	if err != nil {
		return nil, BadFlag{Err: err}
	}
	if log != nil {
		rest.Wrap(log.wrap)
	}
	rest.WarningHandler = restclient.NewWarningWriter(warnings, restclient.WarningWriterOptions{Deduplicate: true})
	// The checks ask their questions all at once.
	rest.QPS, rest.Burst = 50, 100
	if rest.Timeout == 0 {
		rest.Timeout = 30 * time.Second
	}
	dyn, err := dynamic.NewForConfig(rest)
	if err != nil {
		return nil, Unreachable{Err: err}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(rest)
	if err != nil {
		return nil, Unreachable{Err: err}
	}
	// A followed log streams as long as its pod runs, and the context ends
	// it; the logs read at once are as many as the command bounds them to
	// (logsAtOnce, or every pod followed), not fewer for a rate.
	logConfig := restclient.CopyConfig(rest)
	logConfig.Timeout, logConfig.QPS = 0, -1
	logs, err := coreClient(logConfig, nil)
	if err != nil {
		return nil, Unreachable{Err: err}
	}
	followed, err := followingClient(logConfig)
	if err != nil {
		return nil, Unreachable{Err: err}
	}
	podList, err := coreClient(rest, nil)
	if err != nil {
		return nil, Unreachable{Err: err}
	}
	listConfig := restclient.CopyConfig(rest)
	listConfig.Timeout = 0
	lists, err := coreClient(listConfig, nil)
	if err != nil {
		return nil, Unreachable{Err: err}
	}
	watches, err := dynamic.NewForConfig(listConfig)
	if err != nil {
		return nil, Unreachable{Err: err}
	}
	return &Client{Dynamic: dyn, Watches: watches, Discovery: disc, LogSource: restLogs{client: logs, following: followed},
		PodSource: restPods{client: podList, watches: lists}, ObjectSource: restObjects{client: lists}, Namespace: namespace, Server: rest.Host}, nil
}

// coreClient is a REST client of core/v1, for pods/log and the lists of
// pods (the typed clientset would link every API's types for them), over
// client (nil: client-go's own for the config). It asks for protobuf,
// which the API server speaks for its own types: a pod in it is a third of
// its JSON, and is read in a sixth of the time.
func coreClient(config *restclient.Config, client *http.Client) (restclient.Interface, error) {
	config = restclient.CopyConfig(config)
	config.APIPath = "/api"
	config.GroupVersion = &schema.GroupVersion{Version: "v1"}
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	// Errors come back as a Status, which the scheme reads too.
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	config.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if client == nil {
		return restclient.RESTClientFor(config)
	}
	return restclient.RESTClientForConfigAndClient(config, client)
}

// followedWindow is how many bytes of a followed log the API server may
// send ahead of what the command has read: HTTP/2's window of each stream,
// 4 MiB unless said. logs -f of a thousand pods reads a thousand streams at
// once, each from the start of its log: with 4 MiB each, a log that comes
// faster than it is printed could hold gigabytes in the command; with
// 64 KiB, at most 64 MiB, and a stream still carries a megabyte a second
// at 50 ms from the API server, more than a training log writes.
const followedWindow = 64 << 10

// followedConns bounds the connections of followed logs to one API server.
// A thousand logs asked at once of a transport that has no connection yet
// would each dial one (HTTP/2 shares a connection only once it is up):
// 836 TLS handshakes seen in a second, and 60 MiB more at the peak of
// logs -f of 1,024 pods. Each connection carries as many streams as the
// API server lets it (100 assumed until it says, 250 or 1,000 said by
// kube-apiserver), so that 32 carry the logs of thousands of pods.
const followedConns = 32

// followingClient is the REST client of followed logs: connections of its
// own (followedConns at most), whose streams have followedWindow, with
// client-go's TLS, dialer, proxy, HTTP/2 health checks and credentials of
// the config.
func followingClient(config *restclient.Config) (restclient.Interface, error) {
	tlsConfig, err := restclient.TLSConfigFor(config)
	if err != nil {
		return nil, err
	}
	dial := config.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	transport := utilnet.SetTransportDefaults(&http.Transport{
		Proxy: config.Proxy, TLSClientConfig: tlsConfig, DialContext: dial,
		MaxConnsPerHost: followedConns, HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: followedWindow},
	})
	wrapped, err := restclient.HTTPWrappersForConfig(config, transport)
	if err != nil {
		return nil, err
	}
	return coreClient(config, &http.Client{Transport: wrapped})
}

// BadFlag is the error for a flag that names what is not there: a
// --kubeconfig file, a --context.
type BadFlag struct{ Err error }

func (e BadFlag) Error() string { return e.Err.Error() }
func (e BadFlag) Unwrap() error { return e.Err }

// Unreachable is the error for a cluster that cannot be asked anything: no
// kubeconfig, an address that does not answer, credentials it refuses.
type Unreachable struct{ Err error }

func (e Unreachable) Error() string { return e.Err.Error() }
func (e Unreachable) Unwrap() error { return e.Err }

// Unreached tells apart the errors that mean the cluster did not answer, or
// did not accept who is asking, from the answers it gave.
func (c *Client) Unreached(err error) error {
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return Unreachable{Err: fmt.Errorf("the cluster at %s does not accept your credentials: %v; log in again, or check --context and --kubeconfig", c.Server, err)}
	case errors.As(err, &netErr), errors.As(err, &urlErr):
		return Unreachable{Err: fmt.Errorf("cannot reach the cluster at %s: %w; check that it is up, and --context and --kubeconfig", c.Server, err)}
	case brokenWatch(err) != nil:
		return Unreachable{Err: fmt.Errorf("cannot reach the cluster at %s: %w; check that it is up, and --context and --kubeconfig", c.Server, brokenWatch(err))}
	}
	return nil
}

// watchDecoding is the cause client-go gives the error of a watch whose
// stream it could not read (its connection lost, say).
const watchDecoding = "ClientWatchDecoding"

// brokenWatch is why the stream of a watch could not be read, when err
// says so (nil otherwise): what came of the connection, as client-go
// said it.
func brokenWatch(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == watchDecoding {
			return brokenStream(c.Message)
		}
	}
	return nil
}

// brokenStream is why a watch's stream could not be read.
type brokenStream string

func (b brokenStream) Error() string { return string(b) }

// cause is what an error of a cluster that could not be reached comes
// down to, in a few words: "dial tcp 10.0.0.1:6443: connect: connection
// refused", without the request's address.
func cause(err error) error {
	var op *net.OpError
	var urlErr *url.Error
	var broken brokenStream
	switch {
	case errors.As(err, &op):
		return op
	case errors.As(err, &broken):
		return broken
	case errors.As(err, &urlErr):
		return urlErr.Err
	}
	return err
}

// Serves tells whether the cluster serves a resource, to tell a missing
// object from a missing API (both are 404 Not Found).
func (c *Client) Serves(ctx context.Context, gvr schema.GroupVersionResource) bool {
	list, err := c.Discovery.ServerResourcesForGroupVersionWithContext(ctx, gvr.GroupVersion().String())
	if err != nil {
		return !apierrors.IsNotFound(err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true
		}
	}
	return false
}

// kueueVersions are the versions of Kueue's API the generator reads, newest
// first: Kueue v0.15 added v1beta2 and deprecated v1beta1, about which the
// API server then warns on every request. The fields read are the same in
// both, but for a ClusterQueue's cohort (cohort, cohortName).
var kueueVersions = []string{"v1beta2", "v1beta1"}

// Kueue is a resource of Kueue's API, in the newest version the cluster
// serves (v1beta1 when it serves none, for the messages that say so).
func (c *Client) Kueue(ctx context.Context, resource string) schema.GroupVersionResource {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kueueVersion == "" {
		c.kueueVersion = kueueVersions[len(kueueVersions)-1]
		for _, v := range kueueVersions {
			if _, err := c.Discovery.ServerResourcesForGroupVersionWithContext(ctx, "kueue.x-k8s.io/"+v); err == nil {
				c.kueueVersion = v
				break
			}
		}
	}
	return kueueResource(c.kueueVersion, resource)
}

func kueueResource(version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: version, Resource: resource}
}

// listKueue lists a resource of Kueue's API in a namespace ("": in all),
// handing each object to take as it is read (see ObjectSource).
func (c *Client) listKueue(ctx context.Context, resource, namespace string, opts metav1.ListOptions, take func(*json.Decoder) error) error {
	return c.inKueue(resource, func(gvr schema.GroupVersionResource) error {
		return c.ObjectSource.Each(ctx, gvr, namespace, opts, take)
	})
}

// inKueue asks ask of a resource of Kueue's API. Until the version the
// cluster serves is known, it asks the newest first: a version not served
// is answered 404, so the question itself finds the version, without a
// question to discovery first.
func (c *Client) inKueue(resource string, ask func(schema.GroupVersionResource) error) error {
	c.mu.Lock()
	versions := kueueVersions
	if c.kueueVersion != "" {
		versions = []string{c.kueueVersion}
	}
	c.mu.Unlock()
	var err error
	for _, v := range versions {
		err = ask(kueueResource(v, resource))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err == nil {
			c.mu.Lock()
			c.kueueVersion = v
			c.mu.Unlock()
		}
		return err
	}
	return err
}

// remember keeps a job that was found, for the next reading of it (take).
func (c *Client) remember(ref Ref, obj *unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.found == nil {
		c.found = map[Ref]*unstructured.Unstructured{}
	}
	c.found[ref] = obj
}

// take is the job found as ref, once: a later reading asks the cluster.
func (c *Client) take(ref Ref) *unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj := c.found[ref]
	delete(c.found, ref)
	return obj
}

// IsWebhookDenial tells an admission webhook's refusal (403 too) from RBAC's.
func IsWebhookDenial(err error) bool {
	return strings.Contains(err.Error(), "admission webhook")
}

// Message is the API server's message of an error, without client-go's
// wrapping.
func Message(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok {
		return status.Status().Message
	}
	return err.Error()
}

// Plural is a kind's plural, as messages write it: PriorityClasses.
func Plural(kind string) string {
	if strings.HasSuffix(kind, "s") {
		return kind + "es"
	}
	return kind + "s"
}
