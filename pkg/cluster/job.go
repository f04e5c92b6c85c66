package cluster

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"
)

// Kueue's labels on a job.
const (
	QueueLabel         = "kueue.x-k8s.io/queue-name"
	PriorityClassLabel = "kueue.x-k8s.io/priority-class"
)

// MultiKueueController is MultiKueue's controller: it runs the admission
// checks of a ClusterQueue that dispatches to worker clusters, and manages
// (spec.managedBy) the jobs it dispatches.
const MultiKueueController = "kueue.x-k8s.io/multikueue"

// Job is a rendered job as the cluster sees it.
type Job struct {
	// Object is what is submitted: the AppWrapper, or the job alone
	// (wrapper: none), in its namespace.
	Object *unstructured.Unstructured
	// Inner is the training job: the AppWrapper's component, or Object.
	Inner *unstructured.Unstructured
	// PodSets are the job's groups of identical pods, as Kueue counts them:
	// the AppWrapper's declared podSets, or those of the kinds Kueue knows
	// (PyTorchJob: one per replica type); a bare T9k job's replica types,
	// as its controller makes them.
	PodSets []PodSet
	// Workspace are the ConfigMaps that carry the folder shipped with the
	// job (Carry), in its namespace: Submit creates them after the job,
	// owned by it.
	Workspace []*unstructured.Unstructured
}

// PodSet is a group of identical pods.
type PodSet struct {
	Name  string
	Count int64
	// Meta is their template's metadata: labels and annotations.
	Meta metav1.ObjectMeta
	Pod  corev1.PodSpec
}

// NewJob reads the rendered manifest (one object) and places it in namespace
// unless it names its own.
func NewJob(manifest []byte, namespace string) (*Job, error) {
	var obj map[string]any
	if err := sigsyaml.Unmarshal(manifest, &obj); err != nil {
		return nil, fmt.Errorf("reading the rendered manifest: %w", err)
	}
	object := &unstructured.Unstructured{Object: obj}
	if object.GetNamespace() == "" {
		object.SetNamespace(namespace)
	}
	return JobOf(object)
}

// JobOf reads a job from its object: one rendered, or one read from the
// cluster.
func JobOf(object *unstructured.Unstructured) (*Job, error) {
	job := &Job{Object: object, Inner: object}
	if inner := innerOf(object.Object); object.GetKind() == "AppWrapper" && inner != nil {
		job.Inner = &unstructured.Unstructured{Object: inner}
	}
	if k := kindOf(object); k != nil {
		sets, err := k.podSets(object.Object)
		if err != nil {
			return nil, err
		}
		job.PodSets = sets
	}
	return job, nil
}

// Count is a count in an object, 1 when it gives none (as replicas,
// parallelism and numNodes default). A rendered manifest holds numbers as
// float64, an object read from the cluster as int64.
func Count(m map[string]any, key string) int64 {
	switch n := m[key].(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case nil:
		return 1
	}
	return 0
}

// podTemplateAt reads the pod template at path (dotted, with [i] for list
// items, as AppWrapper's podSets write it) below obj.
func podTemplateAt(obj map[string]any, path string) (corev1.PodTemplateSpec, error) {
	var at any = obj
	for _, part := range strings.Split(path, ".") {
		name, index, indexed := strings.Cut(strings.TrimSuffix(part, "]"), "[")
		m, _ := at.(map[string]any)
		at = m[name]
		if indexed {
			i, err := strconv.Atoi(index)
			list, _ := at.([]any)
			if err != nil || i < 0 || i >= len(list) {
				return corev1.PodTemplateSpec{}, fmt.Errorf("no pod template at %s", path)
			}
			at = list[i]
		}
	}
	template, ok := at.(map[string]any)
	if !ok {
		return corev1.PodTemplateSpec{}, fmt.Errorf("no pod template at %s", path)
	}
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(template, &t); err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("the pod template at %s: %w", path, err)
	}
	return t, nil
}

// Requests are the resources one pod of the set asks for, as Kueue counts
// them: the containers' requests (their limits where they have none) added
// up, or an init container's if that is more, plus the pod's overhead.
func (p PodSet) Requests() corev1.ResourceList { return p.total(requestsOf) }

// Limits are the limits of one pod of the set, as a ResourceQuota counts
// them (limits.cpu, limits.memory), added up as Requests adds up requests.
func (p PodSet) Limits() corev1.ResourceList {
	return p.total(func(c corev1.Container) corev1.ResourceList { return c.Resources.Limits })
}

// total adds up what each container of a pod has: its containers' added
// up, or an init container's if that is more, plus the pod's overhead.
func (p PodSet) total(of func(corev1.Container) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range p.Pod.Containers {
		addTo(total, of(c))
	}
	for _, c := range p.Pod.InitContainers {
		for name, q := range of(c) {
			if have, ok := total[name]; !ok || q.Cmp(have) > 0 {
				total[name] = q.DeepCopy()
			}
		}
	}
	addTo(total, p.Pod.Overhead)
	return total
}

func requestsOf(c corev1.Container) corev1.ResourceList {
	r := c.Resources.Requests.DeepCopy()
	if r == nil {
		r = corev1.ResourceList{}
	}
	for name, q := range c.Resources.Limits {
		if _, ok := r[name]; !ok {
			r[name] = q.DeepCopy()
		}
	}
	return r
}

func addTo(total, more corev1.ResourceList) {
	for name, q := range more {
		sum := total[name]
		sum.Add(q)
		total[name] = sum
	}
}

// Requests are what the whole job asks for: each podSet's pod requests
// times its count.
func (j *Job) Requests() corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, ps := range j.PodSets {
		for name, q := range ps.Requests() {
			times := q.DeepCopy()
			times.Mul(ps.Count)
			addTo(total, corev1.ResourceList{name: times})
		}
	}
	return total
}

// Pods is the number of pods of the job.
func (j *Job) Pods() int64 {
	var n int64
	for _, ps := range j.PodSets {
		n += ps.Count
	}
	return n
}

// QuotaUse is what the pods of sets count against a ResourceQuota's
// resource, as a quota counts a pod: pods (count/pods), their requests
// (cpu, requests.cpu, requests.nvidia.com/gpu) or their limits
// (limits.cpu); false for a resource no pod counts against (count/ of
// other objects, services).
func QuotaUse(name corev1.ResourceName, sets []PodSet) (resource.Quantity, bool) {
	var total resource.Quantity
	of, each := corev1.ResourceName(strings.TrimPrefix(string(name), "requests.")), PodSet.Requests
	switch {
	case name == corev1.ResourcePods || name == "count/pods":
		for _, ps := range sets {
			total.Add(*resource.NewQuantity(ps.Count, resource.DecimalSI))
		}
		return total, true
	case strings.HasPrefix(string(name), "limits."):
		of, each = corev1.ResourceName(strings.TrimPrefix(string(name), "limits.")), PodSet.Limits
	case strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), "requests."):
		return total, false
	}
	for _, ps := range sets {
		q := each(ps)[of]
		q.Mul(ps.Count)
		total.Add(q)
	}
	return total, true
}

// Made is what the job's controller makes of its pod sets, beside their
// templates, that matters to what judges the pods (Pod Security): the pod
// sets as made (the training operator's init container in a PyTorchJob's
// workers), what its controller adds and how to do without it; the sets as
// they are, and "", when it adds nothing.
func (j *Job) Made() (sets []PodSet, says, fix string) {
	k := kindOf(j.Inner)
	if k == nil || k.adds == nil {
		return j.PodSets, "", ""
	}
	sets = make([]PodSet, len(j.PodSets))
	for i, ps := range j.PodSets {
		ps.Pod = *ps.Pod.DeepCopy()
		k.adds.add(j.Inner.Object, &ps)
		sets[i] = ps
	}
	return sets, k.adds.says, k.adds.fix
}
