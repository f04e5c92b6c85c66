package preflight

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
)

// The namespace's guards of its pods that check reads.
var (
	resourceQuotas = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	limitRanges    = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}
	podsResource   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// guards checks what the namespace's own admission would refuse of the
// job's pods, which it judges when their controller creates them, after
// Kueue has admitted the job (nothing refuses the job itself): its Pod
// Security level, its LimitRanges (their defaults first) and its
// ResourceQuotas, each read and judged here as the API server judges
// them. (Once every finding is in, podDryRun asks the API server itself,
// where the role allows it.)
func (k *checker) guards(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { k.podSecurity(ctx) })
	var quotas []corev1.ResourceQuota
	var ranges []corev1.LimitRange
	var quotasErr, rangesErr error
	wg.Go(func() { quotasErr = listAs(ctx, k, resourceQuotas, &quotas) })
	wg.Go(func() { rangesErr = listAs(ctx, k, limitRanges, &ranges) })
	wg.Wait()
	sets := k.job.PodSets
	if rangesErr != nil {
		k.unchecked(nil, fmt.Sprintf("the LimitRanges of namespace %q", k.namespace),
			cluster.Right{Verb: "list", Resource: limitRanges.GroupResource(), Namespace: k.namespace}, rangesErr)
	} else {
		sets = k.limitRanges(ranges)
	}
	if quotasErr != nil {
		k.unchecked(nil, fmt.Sprintf("the ResourceQuotas of namespace %q", k.namespace),
			cluster.Right{Verb: "list", Resource: resourceQuotas.GroupResource(), Namespace: k.namespace}, quotasErr)
	} else {
		k.resourceQuotas(quotas, sets)
	}
}

// listAs lists the objects of a resource in the job's namespace, as typed
// objects.
func listAs[T any](ctx context.Context, k *checker, gvr schema.GroupVersionResource, into *[]T) error {
	list, err := k.client.Dynamic.Resource(gvr).Namespace(k.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, item := range list.Items {
		var obj T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &obj); err != nil {
			return fmt.Errorf("reading %s %s: %w", gvr.Resource, item.GetName(), err)
		}
		*into = append(*into, obj)
	}
	return nil
}

// guardWords are the words of the API server's refusals of a pod by the
// guards check judges itself: a refusal of the dry run in those words is
// left out when a finding of that guard says it already.
var guardWords = map[string][]string{
	"PodSecurity":   {"violates PodSecurity"},
	"ResourceQuota": {"exceeded quota", "failed quota"},
	"LimitRange":    {"usage per Container", "usage per Pod", "max limit to request ratio"},
}

// podDryRun creates a pod of each of the job's templates in a server-side
// dry run, where the user may create pods (asked first: it is no right
// the generator's roles grant, as it would let a user run pods outside
// every queue): the API server's admission judges it whole, as it will
// judge the pods the job's controller creates, and stores nothing. A
// refusal a finding says already (a guard judged here, a missing object)
// is not said again.
func (k *checker) podDryRun(ctx context.Context) {
	right := cluster.Right{Verb: "create", Resource: podsResource.GroupResource(), Namespace: k.namespace}
	if allowed, err := k.client.May(ctx, right); err != nil || !allowed {
		return
	}
	seen := map[string]bool{}
	for _, ps := range k.job.PodSets {
		pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: *ps.Meta.DeepCopy(), Spec: *ps.Pod.DeepCopy()}
		pod.Name, pod.GenerateName, pod.Namespace = "", k.job.Object.GetName()+"-check-", k.namespace
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pod)
		if err != nil {
			continue
		}
		_, err = k.client.Dynamic.Resource(podsResource).Namespace(k.namespace).Create(ctx, &unstructured.Unstructured{Object: obj},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: cluster.FieldManager})
		if err == nil {
			continue
		}
		if k.client.Unreached(err) != nil {
			k.add(diag.Unchecked, nil, "a dry-run create of the job's pods: %v", err)
			return
		}
		message := cluster.Message(err)
		if seen[message] || k.said(message) {
			continue
		}
		seen[message] = true
		k.add(diag.Error, nil, "the API server refuses the job's pods (a dry-run create of a pod of its template %s), as it would when their controller creates them, after Kueue admitted the job: %s",
			ps.Name, message)
	}
}

// said tells whether a finding already says why the API server refuses
// the dry run of a pod: a guard judged here, whose words the refusal has;
// an object found missing, which it names.
func (k *checker) said(message string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for guard, words := range guardWords {
		for _, w := range words {
			if !strings.Contains(message, w) {
				continue
			}
			for _, f := range k.findings {
				if strings.Contains(f.Message, guard) || strings.Contains(f.Message, w) {
					return true
				}
			}
		}
	}
	for _, r := range k.absent {
		// The API server names some without quotes: no PriorityClass
		// with name default-priority was found.
		if mentions(message, r.kind, r.name) || strings.Contains(message, " "+r.name+" ") && strings.Contains(message, r.kind) {
			return true
		}
	}
	return false
}
