package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	"nodes": true, "namespaces": true, "priorityclasses.scheduling.k8s.io": true, "storageclasses.storage.k8s.io": true,
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
		whats = append(whats, r.What)
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

// JobResources names the resources of the kinds of jobs the generator
// makes, for messages: "appwrappers.workload.codeflare.dev, ...".
func JobResources() string {
	var names []string
	for _, k := range kinds {
		names = append(names, k.resource.GroupResource().String())
	}
	return strings.Join(names, ", ")
}
