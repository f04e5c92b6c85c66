package cluster

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/torchwrap/generator/pkg/profile"
)

// Right is one verb on one resource, as RBAC grants it: in a namespace, in
// all of them ("" for a resource of a namespace), or on the cluster (a
// resource of the whole cluster).
type Right struct {
	Verb string
	// Resource is the resource, and after a slash its subresource:
	// pods/log.
	Resource  schema.GroupResource
	Namespace string
	// Name is the one object of the resource the right is to; "" for
	// every object.
	Name string
}

// The resources of the rights that are not a kind's.
var (
	podsResource             = schema.GroupResource{Resource: "pods"}
	podLogsResource          = schema.GroupResource{Resource: "pods/log"}
	eventsResource           = schema.GroupResource{Resource: "events"}
	configMapsResource       = schema.GroupResource{Resource: "configmaps"}
	workloadsResource        = schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "workloads"}
	pendingWorkloadsResource = schema.GroupResource{Group: "visibility.kueue.x-k8s.io", Resource: "localqueues/pendingworkloads"}
)

// clusterScoped are the resources of the whole cluster among those the
// commands read.
var clusterScoped = map[string]bool{
	"nodes": true, "priorityclasses.scheduling.k8s.io": true, "storageclasses.storage.k8s.io": true,
	"clusterqueues.kueue.x-k8s.io": true, "resourceflavors.kueue.x-k8s.io": true, "topologies.kueue.x-k8s.io": true,
	"workloadpriorityclasses.kueue.x-k8s.io": true, "multikueueconfigs.kueue.x-k8s.io": true,
	"multikueueclusters.kueue.x-k8s.io": true, "clustertrainingruntimes.trainer.kubeflow.org": true,
}

// ClusterScoped tells whether the right is on a resource of the whole
// cluster, which only a ClusterRoleBinding grants.
func (r Right) ClusterScoped() bool {
	resource, _, _ := strings.Cut(r.Resource.Resource, "/")
	return clusterScoped[schema.GroupResource{Group: r.Resource.Group, Resource: resource}.String()]
}

// String writes the right as kubectl auth can-i takes it: "list
// workloads.kueue.x-k8s.io in namespace team-a", "list nodes".
func (r Right) String() string {
	s := r.Verb + " " + r.Resource.String()
	if r.Name != "" {
		s += " " + r.Name
	}
	switch {
	case r.ClusterScoped():
		return s
	case r.Namespace == "":
		return s + " in all namespaces"
	}
	return fmt.Sprintf("%s in namespace %s", s, r.Namespace)
}

// Refusal is one thing a role kept from a command: what it was for, and
// the right that would have given it.
type Refusal struct {
	What string `json:"what"`
	// Needs is the right, as Right.String writes it.
	Needs string `json:"needs"`
}

// Denied are the refusals of one command, said in one line.
type Denied []Refusal

// Add adds a refusal: what the right was for, and the right.
func (d *Denied) Add(what string, r Right) {
	*d = append(*d, Refusal{What: what, Needs: r.String()})
}

// String says what the role kept from the command and the rights that
// would give it, for one line after "not read: " or "could not check: ":
// "why a job waits (Kueue's Workloads), as your role does not allow it;
// the right that would: list workloads.kueue.x-k8s.io in namespace team-a
// (generator access tells each command's)".
func (d Denied) String() string {
	if len(d) == 0 {
		return ""
	}
	var whats, rights []string
	for _, r := range d {
		if !slices.Contains(whats, r.What) {
			whats = append(whats, r.What)
		}
		if !slices.Contains(rights, r.Needs) {
			rights = append(rights, r.Needs)
		}
	}
	which := "the right that would"
	if len(rights) > 1 {
		which = "the rights that would"
	}
	return fmt.Sprintf("%s, as your role does not allow it (RBAC); %s: %s (generator access tells each command's)",
		strings.Join(whats, ", "), which, strings.Join(rights, ", "))
}

// accessReviews asks the API server what the user may do.
var accessReviews = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// May asks the API server whether the user has the right (a
// SelfSubjectAccessReview, which every user may ask).
func (c *Client) May(ctx context.Context, r Right) (bool, error) {
	resource, subresource, _ := strings.Cut(r.Resource.Resource, "/")
	attributes := map[string]any{"verb": r.Verb, "group": r.Resource.Group, "resource": resource}
	if subresource != "" {
		attributes["subresource"] = subresource
	}
	if r.Name != "" {
		attributes["name"] = r.Name
	}
	if !r.ClusterScoped() && r.Namespace != "" {
		attributes["namespace"] = r.Namespace
	}
	review := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authorization.k8s.io/v1",
		"kind":       "SelfSubjectAccessReview",
		"spec":       map[string]any{"resourceAttributes": attributes},
	}}
	answer, err := c.Dynamic.Resource(accessReviews).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, c.failed(err, "asking the API server what you may do")
	}
	allowed, _, _ := unstructured.NestedBool(answer.Object, "status", "allowed")
	return allowed, nil
}

// MayAll asks May of every right at once, 8 questions at a time; the
// answers are in the order of the rights.
func (c *Client) MayAll(ctx context.Context, rights []Right) ([]bool, error) {
	answers := make([]bool, len(rights))
	errs := make([]error, len(rights))
	slots := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, r := range rights {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			answers[i], errs[i] = c.May(ctx, r)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return answers, nil
}

// Use is what one command asks of the API server in a namespace: the
// rights without which it fails (Needs), and those without which it tells
// less (Helps: check's questions, the reasons and positions of status and
// list).
type Use struct {
	Command      string
	Needs, Helps []Right
	// Asks are rights the command uses when the role has them, and which
	// no role of the generator grants, nor generator access asks: check's
	// server-side dry run of the pods, which takes the right to create
	// pods, and with it to run them outside every queue. Without it,
	// check evaluates the namespace's guards itself, from what Helps reads.
	Asks []Right
}

// Uses are the rights of every command that talks to a cluster, for jobs
// of the kinds named (the kind submitted first, then the one it wraps) in
// a namespace. It is the one table of them: generator access asks the API
// server about each, and renders the ClusterRoles an administrator binds
// from it; the simulated cluster checks that each command asks for no
// right but these. An error names a kind the generator does not make.
func Uses(namespace string, kindNames ...string) ([]Use, error) {
	var job []schema.GroupResource
	for _, name := range kindNames {
		k := kindNamed(name)
		if k == nil {
			return nil, fmt.Errorf("the generator makes no %s: the kinds are %s", name, kindList())
		}
		job = append(job, k.resource.GroupResource())
	}
	in := func(verb string, resources ...schema.GroupResource) []Right {
		var rights []Right
		for _, r := range resources {
			rights = append(rights, Right{Verb: verb, Resource: r, Namespace: namespace})
		}
		return rights
	}
	on := func(verb string, resources ...schema.GroupResource) []Right {
		var rights []Right
		for _, r := range resources {
			rights = append(rights, Right{Verb: verb, Resource: r})
		}
		return rights
	}
	kueue := func(resource string) schema.GroupResource {
		return schema.GroupResource{Group: "kueue.x-k8s.io", Resource: resource}
	}
	core := func(resource string) schema.GroupResource { return schema.GroupResource{Resource: resource} }
	submitted := job[:1]
	// Finding a job by its name reads every kind of that name (those the
	// role does not let the user read are left out).
	var every []schema.GroupResource
	for _, k := range kinds {
		every = append(every, k.resource.GroupResource())
	}
	find := in("get", every...)
	listing := slices.Concat(in("list", every...), in("list", workloadsResource, podsResource, eventsResource), in("get", pendingWorkloadsResource))
	// What check asks beside the dry run: the objects the settings name,
	// the queue and its quota, the namespace's own guards of its pods
	// (its Pod Security labels, ResourceQuotas and LimitRanges), the
	// nodes, the cluster's profile.
	questions := slices.Concat(
		in("get", core("namespaces"), kueue("localqueues"), configMapsResource, core("secrets"), core("persistentvolumeclaims"),
			core("serviceaccounts"), schema.GroupResource{Group: "k8s.cni.cncf.io", Resource: "network-attachment-definitions"}),
		in("list", core("resourcequotas"), core("limitranges")),
		[]Right{ProfileRight(profile.ClusterNamespace)},
		on("get", schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, kueue("workloadpriorityclasses"),
			kueue("clusterqueues"), kueue("resourceflavors"), kueue("topologies"), schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"},
			schema.GroupResource{Group: "trainer.kubeflow.org", Resource: "clustertrainingruntimes"}, kueue("multikueueconfigs"), kueue("multikueueclusters")),
		on("list", core("nodes")),
	)
	// What status reads of a job: the job, its Workload, its pods and a
	// log, its events, its place in its queue; and a follower, watching
	// the job (which it cannot follow without), its Workload, its pods and
	// their events.
	reading := slices.Concat(find, in("list", workloadsResource, eventsResource, podsResource), in("get", podLogsResource, pendingWorkloadsResource))
	watching := slices.Concat(in("list", submitted...), in("watch", submitted...))
	following := slices.Concat(reading, watching, in("watch", workloadsResource, eventsResource, podsResource))
	// The pods' dry run: the right is asked first (May), then used.
	podDryRun := in("create", podsResource)
	// Submitting: a server-side apply, which creates the job, then a
	// reading of it. AppWrapper's webhook lets only those who may create
	// the kind it wraps create it (its userRBACAdmissionCheck).
	creating := slices.Concat(in("create", job...), in("patch", submitted...), in("get", submitted...))
	return []Use{
		{Command: "check", Needs: in("create", job...), Helps: questions, Asks: podDryRun},
		{Command: "submit", Needs: creating, Helps: slices.Concat(questions, find), Asks: podDryRun},
		{Command: "submit --wait", Needs: slices.Concat(creating, watching), Helps: slices.Concat(questions, following), Asks: podDryRun},
		{Command: "submit --workspace", Needs: slices.Concat(creating, in("create", configMapsResource)), Helps: slices.Concat(questions, find), Asks: podDryRun},
		{Command: "status", Needs: in("get", submitted...), Helps: reading},
		{Command: "logs", Needs: slices.Concat(in("get", submitted...), in("list", podsResource), in("get", podLogsResource)), Helps: reading},
		{Command: "logs -f", Needs: slices.Concat(in("get", submitted...), watching, in("list", podsResource), in("watch", podsResource), in("get", podLogsResource)),
			Helps: following},
		{Command: "list", Needs: in("list", submitted...), Helps: listing},
		// Across namespaces, else in those the kubeconfig names.
		{Command: "list -A", Helps: slices.Concat(on("list", every...), on("list", workloadsResource, podsResource, eventsResource), listing)},
		{Command: "stop, resume", Needs: slices.Concat(in("get", submitted...), in("list", workloadsResource), in("patch", workloadsResource), in("patch", submitted...)), Helps: find},
		// It deletes the ConfigMaps of the job's workspace with it, and
		// waits until the job and its pods are gone.
		{Command: "delete", Needs: slices.Concat(in("get", submitted...), in("delete", submitted...)),
			Helps: slices.Concat(find, in("list", workloadsResource), in("list", submitted...), in("watch", submitted...), in("list", podsResource), in("watch", podsResource),
				in("get", configMapsResource), in("delete", configMapsResource))},
		{Command: "completion of names", Needs: in("list", submitted...), Helps: in("list", every...)},
		{Command: "profile get", Helps: []Right{ProfileRight(namespace), ProfileRight(profile.ClusterNamespace)}},
		{Command: "run --local --from-cluster", Helps: in("get", configMapsResource, core("secrets"))},
	}, nil
}

// ProfileRight is the right to read the ConfigMap of a profile in a
// namespace.
func ProfileRight(namespace string) Right {
	return Right{Verb: "get", Resource: configMapsResource, Namespace: namespace, Name: profile.ConfigMapName}
}

// kindList names the kinds the generator makes, for messages.
func kindList() string { return kindWords(func(k *kind) string { return k.name }) }

// JobResources names the resources of the kinds of jobs the generator
// makes, for messages: "appwrappers.workload.codeflare.dev, ...".
func JobResources() string {
	return kindWords(func(k *kind) string { return k.resource.GroupResource().String() })
}

// kindWords is a word of each kind, in the order of kinds, for messages.
func kindWords(word func(*kind) string) string {
	var words []string
	for _, k := range kinds {
		words = append(words, word(k))
	}
	return strings.Join(words, ", ")
}

// The ClusterRoles that Roles renders.
const (
	// UserRole is every right of every command in a namespace, to bind
	// there with a RoleBinding, as MLBatch binds its mlbatch-edit.
	UserRole = "torchwrap-user"
	// ReaderRole is the cluster-wide reads that make check whole, to bind
	// with a ClusterRoleBinding.
	ReaderRole = "torchwrap-cluster-reader"
)

// Roles are the ClusterRoles of the rights of every command, for jobs of
// every kind the generator makes: UserRole, the rights in a namespace,
// and ReaderRole, the reads of objects of the whole cluster, and of the
// profiles' ConfigMaps in every namespace by their name (kube-public's is
// the cluster's).
func Roles() []map[string]any {
	// The rights a rule gives, by API group, resource and object name.
	type key struct{ group, resource, name string }
	verbs := map[string]map[key][]string{UserRole: {}, ReaderRole: {}}
	for _, k := range kinds {
		uses, _ := Uses("", k.name)
		for _, u := range uses {
			for _, r := range slices.Concat(u.Needs, u.Helps) {
				role := UserRole
				if r.ClusterScoped() || r.Name != "" {
					role = ReaderRole
				}
				at := key{r.Resource.Group, r.Resource.Resource, r.Name}
				if !slices.Contains(verbs[role][at], r.Verb) {
					verbs[role][at] = append(verbs[role][at], r.Verb)
				}
			}
		}
	}
	var roles []map[string]any
	for _, name := range []string{UserRole, ReaderRole} {
		keys := slices.SortedFunc(maps.Keys(verbs[name]), func(a, b key) int {
			return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.resource, b.resource), cmp.Compare(a.name, b.name))
		})
		var rules []any
		for _, at := range keys {
			v := verbs[name][at]
			slices.Sort(v)
			rule := map[string]any{"apiGroups": []any{at.group}, "resources": []any{at.resource}, "verbs": toAny(v)}
			if at.name != "" {
				rule["resourceNames"] = []any{at.name}
			}
			rules = append(rules, rule)
		}
		roles = append(roles, map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/name": "torchwrap-generator"}},
			"rules":    rules,
		})
	}
	return roles
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
