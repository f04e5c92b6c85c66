// Package preflight asks a cluster whether a rendered job can run there,
// before it is submitted, and changes nothing there (generator check, and
// submit before it submits).
package preflight

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
)

// The resources the checks read.
var (
	priorityClasses = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}
	namespaces      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	nodes           = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	claims          = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	secrets         = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configMaps      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	storageClasses  = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}
	networks        = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
	runtimes        = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}
)

// Check asks the cluster whether the job can run there, every question at
// once: the APIs it needs, the right to create it, a server-side dry-run of
// its creation (which runs the admission webhooks), its queue and the quota
// behind it, and every object the settings name. values are the settings the
// chart saw. The findings are at settings keys, for settings.Input.Locate to
// place: errors, warnings, and what could not be checked (diag.Unchecked).
// The error is cluster.Unreachable when the cluster does not answer at all.
// On a MultiKueue manager, it checks the worker clusters too (workers), and
// looks for what only the pods need on them alone.
func Check(ctx context.Context, c *cluster.Client, job *cluster.Job, values map[string]any) (diag.List, error) {
	return checkOn(ctx, c, job, values, false)
}

// checkOn checks the job on one cluster: a MultiKueue worker, where the job
// is made by MultiKueue, not by the user, or another.
func checkOn(ctx context.Context, c *cluster.Client, job *cluster.Job, values map[string]any, onWorker bool) (diag.List, error) {
	k := &checker{client: c, job: job, values: values, namespace: job.Object.GetNamespace(), cache: map[string]*fetched{}}
	// One question first, alone: when the cluster does not answer, it is the
	// only thing to say.
	top, served, err := k.serves(ctx, job.Object)
	if err != nil {
		return nil, err
	}
	// In a namespace that does not exist, every other finding would be
	// about that.
	if _, err := k.get(ctx, namespaces, "", k.namespace); apierrors.IsNotFound(err) {
		k.missing(ctx, k.namespacePath(), reference{kind: "namespace", gvr: namespaces, name: k.namespace,
			fix: "or choose another with namespace: or -n", closestOnly: true})
		return k.findings, nil
	}
	var mk *multiKueue
	if !onWorker {
		mk = k.dispatch(ctx)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		switch {
		case !served:
			k.notServed(job.Object, "wrapper")
		case !onWorker:
			k.create(ctx, top)
		}
	})
	if job.Inner != job.Object {
		wg.Go(func() {
			if _, served, err := k.serves(ctx, job.Inner); err == nil && !served {
				k.notServed(job.Inner, "jobKind")
			}
		})
	}
	wg.Go(func() { k.queue(ctx) })
	if mk != nil {
		wg.Go(func() { k.workers(ctx, mk) })
	} else {
		wg.Go(func() { k.accelerators(ctx) })
		wg.Go(func() { k.guards(ctx) })
	}
	if len(job.Workspace) > 0 {
		wg.Go(func() { k.workspace(ctx, mk != nil) })
	}
	for _, r := range k.references(ctx) {
		if mk == nil || !podsOnly[r.gvr] {
			wg.Go(func() { k.exists(ctx, r) })
		}
	}
	wg.Wait()
	if mk == nil {
		// Once the findings it may repeat are in.
		k.podDryRun(ctx)
	}
	if k.refusal != nil && !k.explains(k.refusal) {
		k.add(diag.Error, nil, "the API server refuses the %s (a dry-run create): %s", job.Object.GetKind(), cluster.Message(k.refusal))
	}
	// The questions ran at once, and their findings came in the order of
	// their answers: put them in one order, for Locate to keep where two
	// are at one place.
	sort.SliceStable(k.findings, func(i, j int) bool {
		a, b := k.findings[i], k.findings[j]
		if a.Path.String() != b.Path.String() {
			return a.Path.String() < b.Path.String()
		}
		return a.Message < b.Message
	})
	return k.findings, nil
}

// explains tells whether a finding already says why the API server refused
// the dry run: a webhook's refusal that names an object a finding reports
// missing, at its setting's line. A TrainJob whose ClusterTrainingRuntime
// does not exist is refused by two webhooks, Trainer's and Kueue's, in
// words of their own; the API server asks both at once and reports the
// first refusal that comes back. Either way, one mistake is said once.
func (k *checker) explains(refusal error) bool {
	if !cluster.IsWebhookDenial(refusal) {
		return false
	}
	message := cluster.Message(refusal)
	for _, r := range k.absent {
		if mentions(message, r.kind, r.name) {
			return true
		}
	}
	return false
}

// kindWords are the words of a kind's name: Cluster, Training, Runtime.
var kindWords = regexp.MustCompile(`[A-Z]?[a-z]+`)

// mentions tells whether a message is about an object of the kind and name:
// it has the name in quotes (double, single or back quotes, as Go's %q and
// %s in quotes write it), and the kind's last word, in any case: the kind
// (ClusterTrainingRuntime), its resource (clustertrainingruntimes.trainer.kubeflow.org)
// or the word alone (runtime).
func mentions(message, kind, name string) bool {
	quoted := false
	for _, q := range []string{`"`, `'`, "`"} {
		quoted = quoted || strings.Contains(message, q+name+q)
	}
	words := kindWords.FindAllString(kind, -1)
	return quoted && len(words) > 0 && strings.Contains(strings.ToLower(message), strings.ToLower(words[len(words)-1]))
}

// Answers tells whether the findings of Check make a render's warning moot:
// the warning on a priority close to MLBatch's names guesses at what the
// cluster has, and Check asked it, unless it could not.
func Answers(findings diag.List, warning diag.Diagnostic) bool {
	if warning.Path.String() != "priority" {
		return false
	}
	for _, f := range findings {
		if (f.Severity == diag.Unchecked || f.Severity == diag.Denied) && f.Path.String() == "priority" {
			return false
		}
	}
	return true
}

// checker holds what Check found so far, for its questions running at once.
type checker struct {
	client    *cluster.Client
	job       *cluster.Job
	values    map[string]any
	namespace string

	mu       sync.Mutex
	findings diag.List
	cache    map[string]*fetched
	// refusal is the API server's refusal of the dry-run create, reported
	// unless a finding explains it; absent are the objects found missing.
	refusal error
	absent  []reference
}

func (k *checker) add(severity diag.Severity, path diag.Path, format string, args ...any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.findings = append(k.findings, diag.Diagnostic{Severity: severity, Path: path, Message: fmt.Sprintf(format, args...)})
}

// serves finds the resource of an object's kind in the cluster's discovery.
func (k *checker) serves(ctx context.Context, obj *unstructured.Unstructured) (schema.GroupVersionResource, bool, error) {
	gv := obj.GroupVersionKind().GroupVersion()
	list, err := k.client.Discovery.ServerResourcesForGroupVersionWithContext(ctx, gv.String())
	if apierrors.IsNotFound(err) {
		return schema.GroupVersionResource{}, false, nil
	}
	if err := k.client.Unreached(err); err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("asking the cluster which kinds of %s it serves: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Kind == obj.GetKind() && !strings.Contains(r.Name, "/") {
			return gv.WithResource(r.Name), true, nil
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

func (k *checker) notServed(obj *unstructured.Unstructured, key string) {
	gvk := obj.GroupVersionKind()
	fix := "or choose a jobKind this cluster runs"
	if key == "wrapper" {
		fix = "or set wrapper: none to submit the job alone"
		if gvk.Kind != "AppWrapper" {
			key = "jobKind"
			fix = "or choose a jobKind this cluster runs"
		}
	}
	k.add(diag.Error, diag.Path{key}, "this cluster does not serve %s (%s): %s is not installed; ask an administrator to install it, %s",
		cluster.Plural(gvk.Kind), gvk.GroupVersion(), cluster.Operator(gvk.Kind), fix)
}

// fetched is one object read from the cluster, once for every check that
// needs it.
type fetched struct {
	once sync.Once
	obj  *unstructured.Unstructured
	err  error
}

func (k *checker) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	key := gvr.String() + "/" + namespace + "/" + name
	k.mu.Lock()
	f, ok := k.cache[key]
	if !ok {
		f = &fetched{}
		k.cache[key] = f
	}
	k.mu.Unlock()
	f.once.Do(func() {
		f.obj, f.err = k.client.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	})
	return f.obj, f.err
}

// names lists the names of the objects of a resource, for the message of a
// missing one (nameList); none when the list cannot be read.
func (k *checker) names(ctx context.Context, gvr schema.GroupVersionResource, namespace, want string, skip func(string) bool) (list string, closest string) {
	objs, err := k.client.Dynamic.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", ""
	}
	var names []string
	for _, o := range objs.Items {
		if skip == nil || !skip(o.GetName()) {
			names = append(names, o.GetName())
		}
	}
	if len(names) == 0 {
		return "there are none", ""
	}
	return cluster.NameList(names, want, "those")
}

// unchecked reports a question the cluster would not answer: what it was
// about, and the right it takes, which is what the finding is about when
// the user's role does not have it (diag.Denied).
func (k *checker) unchecked(path diag.Path, what string, right cluster.Right, err error) {
	if apierrors.IsForbidden(err) {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.findings = append(k.findings, diag.Diagnostic{Severity: diag.Denied, Path: path, Message: what, Needs: right.String()})
		return
	}
	k.add(diag.Unchecked, path, "%s: %v", what, err)
}

// where names a namespace for messages, or the cluster for cluster-wide
// objects.
func where(namespace string) string {
	if namespace == "" {
		return "on this cluster"
	}
	return fmt.Sprintf("in namespace %q", namespace)
}

// reference is an object the settings name, which must exist when the pods
// start.
type reference struct {
	path      diag.Path // the key that names it
	kind      string    // as kubectl names it: Secret
	gvr       schema.GroupVersionResource
	namespace string // "" for a kind of the whole cluster
	name      string
	// key is one the Secret or ConfigMap must hold, at keyPath; "" for none.
	key     string
	keyPath diag.Path
	// fix is another way out, beside creating the object: "set priority:
	// null to leave it out".
	fix string
	// skip leaves names out of the list of those that exist.
	skip func(string) bool
	// closestOnly names only the closest of those that exist, when there
	// are many and they are not the user's (namespaces).
	closestOnly bool
}

// source is where an environment setting takes its values from: the key
// that names a Secret or a ConfigMap.
type source struct {
	key, kind string
	gvr       schema.GroupVersionResource
}

// references lists the objects the settings name.
func (k *checker) references(ctx context.Context) []reference {
	v, ns := k.values, k.namespace
	var refs []reference
	add := func(r reference) { refs = append(refs, r) }
	if name := priorityClass(k.job); name != "" {
		add(reference{path: diag.Path{"priority"}, kind: "PriorityClass", gvr: priorityClasses, name: name,
			fix: "or set priority: null to leave priorityClassName out", skip: func(n string) bool { return strings.HasPrefix(n, "system-") }})
	}
	if obj := k.job.Object; obj.GetKind() == "TrainJob" {
		if name, _, _ := unstructured.NestedString(obj.Object, "spec", "runtimeRef", "name"); name != "" {
			add(reference{path: diag.Path{"trainingRuntime"}, kind: "ClusterTrainingRuntime", gvr: runtimes, name: name})
		}
	}
	if name := k.job.Object.GetLabels()[cluster.PriorityClassLabel]; name != "" {
		add(reference{path: diag.Path{"workloadPriorityClass"}, kind: "WorkloadPriorityClass", gvr: k.client.Kueue(ctx, "workloadpriorityclasses"), name: name,
			fix: "or remove workloadPriorityClass"})
	}
	for i, vol := range items(v, "volumes") {
		add(reference{path: at("volumes", i, "claimName"), kind: "PersistentVolumeClaim", gvr: claims, namespace: ns, name: text(vol, "claimName")})
	}
	for i, env := range items(v, "environmentVariables") {
		for _, from := range []source{{"secret", "Secret", secrets}, {"configmap", "ConfigMap", configMaps}} {
			if ref, ok := env[from.key].(map[string]any); ok {
				add(reference{path: at("environmentVariables", i, from.key, "name"), kind: from.kind, gvr: from.gvr, namespace: ns,
					name: text(ref, "name"), key: text(ref, "key"), keyPath: at("environmentVariables", i, from.key, "key")})
			}
		}
	}
	for i, src := range items(v, "envFrom") {
		for _, from := range []source{{"secretRef", "Secret", secrets}, {"configMapRef", "ConfigMap", configMaps}} {
			if ref, ok := src[from.key].(map[string]any); ok && ref["optional"] != true {
				add(reference{path: at("envFrom", i, from.key, "name"), kind: from.kind, gvr: from.gvr, namespace: ns, name: text(ref, "name"),
					fix: "or mark it optional: true"})
			}
		}
	}
	for i, s := range items(v, "imagePullSecrets") {
		add(reference{path: at("imagePullSecrets", i, "name"), kind: "Secret", gvr: secrets, namespace: ns, name: text(s, "name")})
	}
	if name := text(v, "serviceAccountName"); name != "" {
		add(reference{path: diag.Path{"serviceAccountName"}, kind: "ServiceAccount", gvr: serviceAccounts, namespace: ns, name: name,
			fix: "or remove serviceAccountName to use the namespace's default"})
	}
	if ssh, ok := v["sshGitCloneConfig"].(map[string]any); ok {
		// The keys are those of the default sshCmd; one of the user's own
		// may name others.
		keys := text(ssh, "sshCmd") == ""
		secret := reference{path: diag.Path{"sshGitCloneConfig", "secretName"}, kind: "Secret", gvr: secrets, namespace: ns, name: text(ssh, "secretName")}
		hosts := reference{path: diag.Path{"sshGitCloneConfig", "configMapName"}, kind: "ConfigMap", gvr: configMaps, namespace: ns, name: text(ssh, "configMapName")}
		if keys {
			secret.key, secret.keyPath = "id_rsa", secret.path
			hosts.key, hosts.keyPath = "known_hosts", hosts.path
		}
		add(secret)
		add(hosts)
	}
	if name := text(v, "topologyFileConfigMap"); name != "" {
		add(reference{path: diag.Path{"topologyFileConfigMap"}, kind: "ConfigMap", gvr: configMaps, namespace: ns, name: name,
			key: "virtualTopology.xml", keyPath: diag.Path{"topologyFileConfigMap"}})
	}
	if name := text(v, "ncclGdrEnvConfigMap"); name != "" {
		add(reference{path: diag.Path{"ncclGdrEnvConfigMap"}, kind: "ConfigMap", gvr: configMaps, namespace: ns, name: name})
	}
	if nvme, ok := v["mountNVMe"].(map[string]any); ok {
		path, name := diag.Path{"mountNVMe", "storageClassName"}, text(nvme, "storageClassName")
		if name == "" {
			// The chart's default.
			path, name = diag.Path{"mountNVMe"}, "odf-lvm-vg1"
		}
		add(reference{path: path, kind: "StorageClass", gvr: storageClasses, name: name,
			fix: "or name the cluster's NVMe StorageClass in mountNVMe.storageClassName"})
	}
	if name := text(v, "multiNicNetworkName"); name != "" {
		// Multus reads namespace/name, or a name in the pod's namespace.
		namespace := ns
		if before, after, ok := strings.Cut(name, "/"); ok {
			namespace, name = before, after
		}
		add(reference{path: diag.Path{"multiNicNetworkName"}, kind: "NetworkAttachmentDefinition", gvr: networks, namespace: namespace, name: name})
	}
	if tb, ok := v["tensorboardSpec"].(map[string]any); ok {
		if logDir, ok := tb["logDir"].(map[string]any); ok {
			for i, pvc := range items(logDir, "pvc") {
				add(reference{path: diag.Path{"tensorboardSpec", "logDir", "pvc", fmt.Sprint(i), "name"}, kind: "PersistentVolumeClaim", gvr: claims, namespace: ns, name: text(pvc, "name")})
			}
		}
		filesets, _ := tb["trainingLogFilesets"].([]any)
		for i, f := range filesets {
			location, _ := f.(string)
			claim, _, _ := strings.Cut(strings.TrimPrefix(location, "t9k://pvc/"), "/")
			add(reference{path: diag.Path{"tensorboardSpec", "trainingLogFilesets", fmt.Sprint(i)}, kind: "PersistentVolumeClaim", gvr: claims, namespace: ns, name: claim})
		}
	}
	return refs
}

// exists checks that a referenced object exists, and holds its key.
func (k *checker) exists(ctx context.Context, r reference) {
	obj, err := k.get(ctx, r.gvr, r.namespace, r.name)
	what := fmt.Sprintf("%s %q %s", r.kind, r.name, where(r.namespace))
	switch {
	case apierrors.IsNotFound(err) && !k.client.Serves(ctx, r.gvr):
		k.add(diag.Error, r.path, "this cluster serves no %s (%s), so %s cannot exist; remove %s, or ask an administrator which to use",
			cluster.Plural(r.kind), r.gvr.GroupVersion(), what, r.path)
	case apierrors.IsNotFound(err):
		k.missing(ctx, r.path, r)
	case err != nil:
		k.unchecked(r.path, what, cluster.Right{Verb: "get", Resource: r.gvr.GroupResource(), Namespace: r.namespace}, err)
	case r.key != "":
		keys := dataKeys(obj)
		if _, ok := keys[r.key]; !ok {
			list := make([]string, 0, len(keys))
			for key := range keys {
				list = append(list, key)
			}
			sort.Strings(list)
			k.add(diag.Error, r.keyPath, "%s has no key %q (its keys: %s); name one of its keys, or add %q to it",
				what, r.key, strings.Join(list, ", "), r.key)
		}
	case r.gvr == secrets && r.path[0] == "imagePullSecrets":
		if t, _, _ := unstructured.NestedString(obj.Object, "type"); t != string(corev1.SecretTypeDockerConfigJson) && t != string(corev1.SecretTypeDockercfg) {
			k.add(diag.Warning, r.path, "%s is of type %s, not %s: the kubelet pulls no image with it; recreate it with kubectl create secret docker-registry",
				what, t, corev1.SecretTypeDockerConfigJson)
		}
	}
}

// missing reports an object that does not exist, with those that do.
func (k *checker) missing(ctx context.Context, path diag.Path, r reference) {
	list, closest := k.names(ctx, r.gvr, r.namespace, r.name, r.skip)
	msg := fmt.Sprintf("no %s %q %s", r.kind, r.name, where(r.namespace))
	if list != "" && !r.closestOnly {
		msg += " (" + list + ")"
	}
	if closest != "" {
		msg += fmt.Sprintf("; did you mean %q? Otherwise create it first", closest)
	} else {
		msg += "; create it first, or name one that exists"
	}
	if r.fix != "" {
		msg += "; " + r.fix
	}
	k.add(diag.Error, path, "%s", msg)
	k.mu.Lock()
	k.absent = append(k.absent, r)
	k.mu.Unlock()
}

// dataKeys are the keys of a Secret or ConfigMap; never their values.
func dataKeys(obj *unstructured.Unstructured) map[string]bool {
	keys := map[string]bool{}
	for _, field := range []string{"data", "binaryData", "stringData"} {
		m, _, _ := unstructured.NestedMap(obj.Object, field)
		for key := range m {
			keys[key] = true
		}
	}
	return keys
}

// create asks whether the user may create the object, and the API server to
// create it in a dry run: its validation and every admission webhook run,
// and nothing is stored. Kueue's webhook suspends the jobs of the kinds it
// manages: a job with a queue label that comes back running would run at
// once, outside every queue.
func (k *checker) create(ctx context.Context, gvr schema.GroupVersionResource) {
	obj := k.job.Object
	kind := obj.GetKind()
	if allowed, err := k.mayCreate(ctx, gvr); err == nil && !allowed {
		k.add(diag.Error, k.namespacePath(), "you may not create %s %s (RBAC); ask an administrator for the right, or choose a namespace where you may (namespace:, or -n)",
			cluster.Plural(kind), where(k.namespace))
		return
	}
	resource := k.client.Dynamic.Resource(gvr).Namespace(k.namespace)
	created, err := resource.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: cluster.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		k.add(diag.Warning, diag.Path{"jobName"}, "%s %q exists %s already; generator submit replaces it once it has finished (at once with --force), or choose another jobName",
			cluster.Indefinite(kind), obj.GetName(), where(k.namespace))
		// The same object under a name the server makes up, for what the
		// webhooks say of it.
		copy := obj.DeepCopy()
		copy.SetGenerateName(obj.GetName() + "-")
		copy.SetName("")
		created, err = resource.Create(ctx, copy, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: cluster.FieldManager})
	}
	switch {
	case apierrors.IsForbidden(err) && !cluster.IsWebhookDenial(err):
		k.add(diag.Error, k.namespacePath(), "the API server does not let you create this %s %s: %s", kind, where(k.namespace), cluster.Message(err))
	case err != nil && k.client.Unreached(err) != nil:
		k.add(diag.Unchecked, nil, "a dry-run create of the %s: %v", kind, err)
	case err != nil:
		k.mu.Lock()
		k.refusal = err
		k.mu.Unlock()
	case obj.GetLabels()[cluster.QueueLabel] != "" && !cluster.JobSuspended(created):
		k.unmanaged(created)
	}
}

// mayCreate asks the API server whether the user may create objects of the
// resource in the namespace.
func (k *checker) mayCreate(ctx context.Context, gvr schema.GroupVersionResource) (bool, error) {
	return k.client.May(ctx, cluster.Right{Verb: "create", Resource: gvr.GroupResource(), Namespace: k.namespace})
}

// workspace checks that the ConfigMaps of the job's workspace can be
// made, and reach its pods: not on a MultiKueue worker.
func (k *checker) workspace(ctx context.Context, dispatched bool) {
	if dispatched {
		k.add(diag.Error, diag.Path{"queueName"}, "this queue sends the job to a MultiKueue worker cluster, and MultiKueue copies the job only, not the ConfigMaps of its workspace (--workspace); "+
			"ship the code in the image or with setupCommands (git clone), or choose a queue of this cluster")
		return
	}
	if allowed, err := k.mayCreate(ctx, configMaps); err == nil && !allowed {
		k.add(diag.Error, k.namespacePath(), "you may not create ConfigMaps %s (RBAC), which carry the workspace (--workspace); ask an administrator for the right, or ship the code in the image",
			where(k.namespace))
	}
}

// namespacePath is the key where a finding about the namespace goes: the
// namespace setting if the user gave one.
func (k *checker) namespacePath() diag.Path {
	if text(k.values, "namespace") != "" {
		return diag.Path{"namespace"}
	}
	return nil
}

// unmanaged reports a job that Kueue's webhook did not suspend. Kueue names
// its integrations group/kind: kubeflow.org/pytorchjob.
func (k *checker) unmanaged(obj *unstructured.Unstructured) {
	gvk := obj.GroupVersionKind()
	integration := gvk.Group + "/" + strings.ToLower(gvk.Kind)
	msg := fmt.Sprintf("Kueue does not manage %s on this cluster (its %s integration is off", cluster.Plural(gvk.Kind), integration)
	if gvk.Kind == "PyTorchJob" {
		msg += ", the default since Kueue v0.19"
	}
	msg += "): the job would start at once, outside every queue and quota, and queueName would do nothing; "
	switch gvk.Kind {
	case "AppWrapper":
		k.add(diag.Error, diag.Path{"queueName"}, "%sask an administrator to turn the integration on", msg)
	case "TrainJob":
		k.add(diag.Error, diag.Path{"jobKind"}, "%sask an administrator to turn the integration on, or use jobKind JobSet in an AppWrapper", msg)
	default:
		k.add(diag.Error, diag.Path{"wrapper"}, "%sset wrapper: AppWrapper, or ask an administrator to turn the integration on", msg)
	}
}

// priorityClass is the PriorityClass the job's pods name: the priority
// setting, or its default for the kind.
func priorityClass(job *cluster.Job) string {
	for _, set := range job.PodSets {
		if set.Pod.PriorityClassName != "" {
			return set.Pod.PriorityClassName
		}
	}
	return ""
}

func text(v map[string]any, key string) string {
	s, _ := v[key].(string)
	return s
}

// items are the maps of a list setting.
func items(v map[string]any, key string) []map[string]any {
	list, _ := v[key].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		m, _ := item.(map[string]any)
		out = append(out, m)
	}
	return out
}

// at is the path of a key of a list item: at("volumes", 0, "claimName").
func at(list string, i int, keys ...string) diag.Path {
	return append(diag.Path{list, fmt.Sprint(i)}, keys...)
}
