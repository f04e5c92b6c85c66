package cluster

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kind is all the generator knows of one kind of job it makes: where the
// cluster serves it, how to find its pods and tell them apart, what its
// training container is, how many pods it has, how to read its state, and
// how to hold it without deleting it. Every question about a kind is
// answered here, and nowhere else.
type kind struct {
	name     string
	resource schema.GroupVersionResource
	// operator is what serves the kind, for the fix when a cluster does not.
	operator string
	// podLabel is the label its controller puts on its pods, valued with
	// the job's name; "" for a kind whose pods are found by their owner.
	podLabel string
	// container is the training container of its pods, as the chart names
	// it (torchwrap.containerName).
	container string
	// kueue tells whether Kueue manages the kind on its own: a job of it
	// with the queue label gets a Workload of its own.
	kueue bool
	// suspend is the field of the job that holds it, for a job Kueue does
	// not manage (Kueue's own is the Workload's spec.active).
	suspend []string
	// managedBy is the field that names the controller of a job Kueue
	// manages: MultiKueueController for one a MultiKueue manager
	// dispatches to a worker cluster.
	managedBy []string
	// podSets are the job's groups of identical pods, as Kueue counts them
	// (T9k's: as its controller makes them).
	podSets func(obj map[string]any) ([]PodSet, error)
	// state reads the job's state from its status.
	state func(s *Status, obj *unstructured.Unstructured) error
	// member is a pod's place in a job of the kind (obj); false when the
	// pod does not say it.
	member func(obj map[string]any, pod *corev1.Pod) (Member, bool)
	// runs is how many runs a job of the kind may make, its retries and
	// one; nil, or 0, when it does not say.
	runs func(obj *unstructured.Unstructured) int
	// podMaker is the kind of the objects whose controller creates the
	// job's pods, and says in a Warning event when the API server refuses
	// one: "" for the job itself (the training operator's, T9k's), Job for
	// the Jobs of a JobSet (a TrainJob's, through the JobSet of its name),
	// named <jobset>-<replicated job>-<index>; an AppWrapper's is its
	// component's.
	podMaker string
	// adds is what the kind's controller adds to the pods of a set, beside
	// their template, that matters to what judges them (Pod Security):
	// says what, and fix how to do without it. nil for nothing.
	adds *additions
}

// additions are what a kind's controller adds to its pods.
type additions struct {
	add       func(obj map[string]any, set *PodSet)
	says, fix string
}

// operatorInit is the init container the training operator (v1.9, its
// default template) adds to a PyTorchJob's workers, which waits for the
// master's name: without a security context.
var operatorInit = &additions{
	add: func(obj map[string]any, set *PodSet) {
		if mapAt(obj, "spec", "pytorchReplicaSpecs", "Master") == nil || set.Name != "worker" {
			return
		}
		set.Pod.InitContainers = append(set.Pod.InitContainers, corev1.Container{Name: "init-pytorch", Image: "alpine:3.10",
			Command: []string{"sh", "-c", "nslookup"}})
	},
	says: "the training operator adds its init container init-pytorch to the workers' pods, as its default template has it, without a security context",
	fix:  "use jobKind: JobSet, or numPods: 1 (no workers), or ask an administrator to give the operator an init container template that meets it (--pytorch-init-container-template-file)",
}

// The labels that mark a job's pods.
const (
	appWrapperLabel = "workload.codeflare.dev/appwrapper"
	pyTorchJobLabel = "training.kubeflow.org/job-name"
	// jobSetLabel marks the pods of a JobSet, and of a TrainJob: the
	// Trainer makes a JobSet of the TrainJob's name.
	jobSetLabel = "jobset.sigs.k8s.io/jobset-name"
)

// kinds are the kinds a job is submitted as, in the order messages name
// them: what makes a job of the same name before it (the AppWrapper its
// component, a TrainJob its JobSet), then the jobs submitted alone. (Set in
// init: an AppWrapper's entry looks up its component's.)
var kinds []*kind

func init() { kinds = table() }

func table() []*kind {
	return []*kind{{
		name:     "AppWrapper",
		operator: "the AppWrapper controller",
		resource: schema.GroupVersionResource{Group: "workload.codeflare.dev", Version: "v1beta2", Resource: "appwrappers"},
		// Its controller labels the pods of every component, whatever their
		// kind; a wrapped job's pods also carry that job's own labels.
		podLabel:  appWrapperLabel,
		kueue:     true,
		suspend:   []string{"spec", "suspend"},
		managedBy: []string{"spec", "managedBy"},
		podSets:   appWrapperPodSets,
		state:     (*Status).fromAppWrapper,
		// Its retryLimit annotation, else its controller's default.
		runs: func(obj *unstructured.Unstructured) int {
			limit, err := strconv.Atoi(obj.GetAnnotations()[retryLimit])
			if err != nil {
				return 0
			}
			return limit + 1
		},
		member: func(obj map[string]any, pod *corev1.Pod) (Member, bool) {
			inner := innerOf(obj)
			if k := kindNamed(stringAt(inner, "kind")); k != nil {
				return k.member(inner, pod)
			}
			return Member{}, false
		},
	}, {
		name:      "TrainJob",
		operator:  "Kubeflow Trainer",
		resource:  schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"},
		podLabel:  jobSetLabel,
		container: "node",
		kueue:     true,
		suspend:   []string{"spec", "suspend"},
		managedBy: []string{"spec", "managedBy"},
		podSets:   trainJobPodSets,
		podMaker:  "Job",
		// The Trainer copies its JobSet's Completed (as Complete) and Failed.
		state: conditionsNamed(names{succeeded: "Complete"}),
		// Its JobSet has one replicated job, node, of one Job.
		member: func(_ map[string]any, pod *corev1.Pod) (Member, bool) { return jobSetMember(nil, pod) },
	}, {
		name:      "PyTorchJob",
		operator:  "the Kubeflow training operator",
		resource:  schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"},
		podLabel:  pyTorchJobLabel,
		container: "pytorch",
		kueue:     true,
		suspend:   []string{"spec", "runPolicy", "suspend"},
		managedBy: []string{"spec", "runPolicy", "managedBy"},
		podSets:   pyTorchJobPodSets,
		adds:      operatorInit,
		state:     conditionsNamed(names{succeeded: "Succeeded", restarting: "Restarting", running: "Running"}),
		member:    pyTorchJobMember,
	}, {
		name:      "JobSet",
		operator:  "the JobSet controller",
		resource:  schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"},
		podLabel:  jobSetLabel,
		container: "pytorch",
		kueue:     true,
		suspend:   []string{"spec", "suspend"},
		managedBy: []string{"spec", "managedBy"},
		podSets:   jobSetPodSets,
		podMaker:  "Job",
		state:     conditionsNamed(names{succeeded: "Completed", restarting: "RestartingJobSet"}),
		member: func(obj map[string]any, pod *corev1.Pod) (Member, bool) {
			return jobSetMember(sliceAt(obj, "spec", "replicatedJobs"), pod)
		},
	}, {
		name:      "PyTorchTrainingJob",
		operator:  "T9k's job controller",
		resource:  schema.GroupVersionResource{Group: "batch.tensorstack.dev", Version: "v1beta1", Resource: "pytorchtrainingjobs"},
		container: "pytorch",
		// T9k's jobs have no suspend field; pausing stops their pods.
		suspend: []string{"spec", "runMode", "pause", "enabled"},
		podSets: func(obj map[string]any) ([]PodSet, error) {
			specs := sliceAt(obj, "spec", "replicaSpecs")
			var sets []PodSet
			for i, s := range specs {
				spec, _ := s.(map[string]any)
				pod, err := podTemplateAt(spec, "template")
				if err != nil {
					return nil, fmt.Errorf("replicaSpecs[%d]: %w", i, err)
				}
				sets = append(sets, PodSet{Name: stringAt(spec, "type"), Count: Count(spec, "replicas"), Meta: pod.ObjectMeta, Pod: pod.Spec})
			}
			return sets, nil
		},
		state:  (*Status).fromT9k,
		member: t9kMember,
	}, {
		name:      "DeepSpeedJob",
		operator:  "T9k's job controller",
		resource:  schema.GroupVersionResource{Group: "batch.tensorstack.dev", Version: "v1beta1", Resource: "deepspeedjobs"},
		container: "worker",
		suspend:   []string{"spec", "runMode", "pause", "enabled"},
		podSets: func(obj map[string]any) ([]PodSet, error) {
			worker := mapAt(obj, "spec", "worker")
			pod, err := podTemplateAt(worker, "template")
			if err != nil {
				return nil, fmt.Errorf("worker: %w", err)
			}
			return []PodSet{{Name: "worker", Count: Count(worker, "replicas"), Meta: pod.ObjectMeta, Pod: pod.Spec}}, nil
		},
		state:  (*Status).fromT9k,
		member: t9kMember,
	}}
}

// kindNamed is the kind of that name; nil for one the generator does not
// make.
func kindNamed(name string) *kind {
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	return nil
}

// kindCalled is the kind a command line calls by a word, as kubectl takes
// it: its name or its resource (PyTorchJob, pytorchjobs), in any case,
// either with its group as kubectl get -o name writes it
// (pytorchjob.kubeflow.org); nil for a word that calls no kind the
// generator makes.
func kindCalled(word string) *kind {
	word = strings.ToLower(word)
	for _, k := range kinds {
		for _, name := range []string{strings.ToLower(k.name), k.resource.Resource} {
			if word == name || word == name+"."+k.resource.Group {
				return k
			}
		}
	}
	return nil
}

// kindNames are the names of the kinds, in the order of the table.
func kindNames() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return names
}

// Operator is what serves a kind of job: the AppWrapper controller, the
// Kubeflow training operator; "" for a kind the generator does not make.
func Operator(kind string) string {
	if k := kindNamed(kind); k != nil {
		return k.operator
	}
	return ""
}

// kindOf is the kind of an object; nil for one the generator does not make.
func kindOf(obj *unstructured.Unstructured) *kind { return kindNamed(obj.GetKind()) }

// retryLimit is the AppWrapper's annotation of how many times it resets its
// job after a failure.
const retryLimit = "workload.codeflare.dev.appwrapper/retryLimit"

// selector selects the pods of a job by the label its controller puts on
// them; "" for a kind whose pods are found by their owner instead.
func (k *kind) selector(name string) string {
	if k.podLabel == "" {
		return ""
	}
	return k.podLabel + "=" + name
}

// owns tells whether a pod (of the job's namespace) is one of the job's.
func (k *kind) owns(obj *unstructured.Unstructured, pod metav1.Object) bool {
	if k.podLabel != "" {
		return pod.GetLabels()[k.podLabel] == obj.GetName()
	}
	for _, ref := range pod.GetOwnerReferences() {
		if ref.UID == obj.GetUID() {
			return true
		}
	}
	return false
}

// JobSuspended tells whether a job's own suspend field holds it (false for
// a kind the generator does not make): with the queue label, that is how
// Kueue holds a job it has not admitted.
func JobSuspended(obj *unstructured.Unstructured) bool {
	k := kindOf(obj)
	return k != nil && k.suspended(obj)
}

// suspended tells whether the job's own suspend field holds it.
func (k *kind) suspended(obj *unstructured.Unstructured) bool {
	s, _, _ := unstructured.NestedBool(obj.Object, k.suspend...)
	return s
}

// trainingContainer is the container whose log is the job's: the one the
// chart names for the job's kind (the wrapped one's, in an AppWrapper),
// else the one kubectl would read, else the first.
func (k *kind) trainingContainer(obj map[string]any, pod *corev1.Pod) string {
	name := k.container
	if k.name == "AppWrapper" {
		if inner := kindNamed(stringAt(innerOf(obj), "kind")); inner != nil {
			name = inner.container
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return name
		}
	}
	if name := pod.Annotations["kubectl.kubernetes.io/default-container"]; name != "" {
		return name
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}

// Member is a pod's place in its job: its role and index, as the job's
// kind names its pods (master-0, worker-1, node-3), and its node rank, the
// torchrun node rank its pod has.
type Member struct {
	Role  string `json:"role"`
	Index int    `json:"index"`
	Rank  int    `json:"rank"`
}

// String is the role and index: worker-1.
func (m Member) String() string { return m.Role + "-" + strconv.Itoa(m.Index) }

// innerOf is the job an AppWrapper wraps: its first component's template.
func innerOf(obj map[string]any) map[string]any {
	components := sliceAt(obj, "spec", "components")
	if len(components) == 0 {
		return nil
	}
	component, _ := components[0].(map[string]any)
	template, _ := component["template"].(map[string]any)
	return template
}

// sliceAt and mapAt are the list and the object at a path below obj, as
// obj holds them, not copied (unstructured's NestedSlice and NestedMap
// copy them whole: a job's whole pod template, for each pod a follower
// places in it); nil for none.
func sliceAt(obj map[string]any, fields ...string) []any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	s, _ := v.([]any)
	return s
}

func mapAt(obj map[string]any, fields ...string) map[string]any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	m, _ := v.(map[string]any)
	return m
}

func stringAt(obj map[string]any, key string) string {
	s, _ := obj[key].(string)
	return s
}

// pyTorchJobMember reads the training operator's labels: replica type
// (master, worker) and index. The master is node rank 0; worker i is rank
// i + the number of masters.
func pyTorchJobMember(obj map[string]any, pod *corev1.Pod) (Member, bool) {
	role := strings.ToLower(pod.Labels["training.kubeflow.org/replica-type"])
	index, err := strconv.Atoi(pod.Labels["training.kubeflow.org/replica-index"])
	if role == "" || err != nil {
		return Member{}, false
	}
	m := Member{Role: role, Index: index, Rank: index}
	if role == "worker" {
		if master := mapAt(obj, "spec", "pytorchReplicaSpecs", "Master"); master != nil {
			m.Rank += int(Count(master, "replicas"))
		}
	}
	return m, true
}

// jobSetMember reads JobSet's labels: replicated job, Job index, and the
// Job controller's completion index (a label, else the annotation). The
// role is the replicated job's name, with the Job's index when it has more
// than one Job (jobs, the JobSet's replicatedJobs, tells; nil for one). The
// rank counts the pods of the replicated jobs and Jobs before it.
func jobSetMember(jobs []any, pod *corev1.Pod) (Member, bool) {
	role := pod.Labels["jobset.sigs.k8s.io/replicatedjob-name"]
	completion := pod.Labels["batch.kubernetes.io/job-completion-index"]
	if completion == "" {
		completion = pod.Annotations["batch.kubernetes.io/job-completion-index"]
	}
	index, err := strconv.Atoi(completion)
	if role == "" || err != nil {
		return Member{}, false
	}
	jobIndex, _ := strconv.Atoi(pod.Labels["jobset.sigs.k8s.io/job-index"])
	m := Member{Role: role, Index: index, Rank: index}
	for _, j := range jobs {
		job, _ := j.(map[string]any)
		spec := mapAt(job, "template", "spec")
		replicas, perJob := Count(job, "replicas"), min(Count(spec, "parallelism"), Count(spec, "completions"))
		if stringAt(job, "name") != role {
			m.Rank += int(replicas * perJob)
			continue
		}
		m.Rank += jobIndex * int(perJob)
		if replicas > 1 {
			m.Role = fmt.Sprintf("%s-%d", role, jobIndex)
		}
		break
	}
	return m, true
}

// t9kMember reads a T9k pod's name, <job>-<type>-<index>: T9k does not
// document the labels of its pods. The rank counts the replicas of the
// types before it, in the order of the job's replicaSpecs (a DeepSpeedJob
// has workers alone).
func t9kMember(obj map[string]any, pod *corev1.Pod) (Member, bool) {
	meta, _ := obj["metadata"].(map[string]any)
	rest, ok := strings.CutPrefix(pod.Name, stringAt(meta, "name")+"-")
	role, indexText, found := strings.Cut(rest, "-")
	index, err := strconv.Atoi(indexText)
	if !ok || !found || err != nil {
		return Member{}, false
	}
	m := Member{Role: role, Index: index, Rank: index}
	for _, s := range sliceAt(obj, "spec", "replicaSpecs") {
		spec, _ := s.(map[string]any)
		if stringAt(spec, "type") == role {
			break
		}
		m.Rank += int(Count(spec, "replicas"))
	}
	return m, true
}

// appWrapperPodSets are an AppWrapper's podSets: those each component
// declares, else those Kueue infers from the component's kind.
func appWrapperPodSets(obj map[string]any) ([]PodSet, error) {
	var sets []PodSet
	for i, c := range sliceAt(obj, "spec", "components") {
		component, _ := c.(map[string]any)
		template, _ := component["template"].(map[string]any)
		declared, _ := component["podSets"].([]any)
		if len(declared) == 0 {
			if k := kindNamed(stringAt(template, "kind")); k != nil && k.kueue {
				inferred, err := k.podSets(template)
				if err != nil {
					return nil, err
				}
				sets = append(sets, inferred...)
			}
			continue
		}
		for j, d := range declared {
			ps, _ := d.(map[string]any)
			path, _ := ps["path"].(string)
			pod, err := podTemplateAt(component, path)
			if err != nil {
				return nil, fmt.Errorf("component %d, podSet %d: %w", i, j, err)
			}
			sets = append(sets, PodSet{Name: fmt.Sprintf("%d-%d", i, j), Count: Count(ps, "replicas"), Meta: pod.ObjectMeta, Pod: pod.Spec})
		}
	}
	return sets, nil
}

// pyTorchJobPodSets are a PyTorchJob's replica types, by name.
func pyTorchJobPodSets(obj map[string]any) ([]PodSet, error) {
	specs := mapAt(obj, "spec", "pytorchReplicaSpecs")
	names := make([]string, 0, len(specs))
	for name := range specs {
		names = append(names, name)
	}
	sort.Strings(names)
	var sets []PodSet
	for _, name := range names {
		spec, _ := specs[name].(map[string]any)
		pod, err := podTemplateAt(spec, "template")
		if err != nil {
			return nil, fmt.Errorf("pytorchReplicaSpecs.%s: %w", name, err)
		}
		sets = append(sets, PodSet{Name: strings.ToLower(name), Count: Count(spec, "replicas"), Meta: pod.ObjectMeta, Pod: pod.Spec})
	}
	return sets, nil
}

// jobSetPodSets are a JobSet's replicated jobs: replicas × pods of each Job.
func jobSetPodSets(obj map[string]any) ([]PodSet, error) {
	var sets []PodSet
	for i, j := range sliceAt(obj, "spec", "replicatedJobs") {
		job, _ := j.(map[string]any)
		spec := mapAt(job, "template", "spec")
		pod, err := podTemplateAt(job, "template.spec.template")
		if err != nil {
			return nil, fmt.Errorf("replicatedJobs[%d]: %w", i, err)
		}
		pods := min(Count(spec, "parallelism"), Count(spec, "completions"))
		sets = append(sets, PodSet{Name: stringAt(job, "name"), Count: Count(job, "replicas") * pods, Meta: pod.ObjectMeta, Pod: pod.Spec})
	}
	return sets, nil
}

// trainJobPodSets are a TrainJob's nodes: its trainer's numNodes pods, as
// far as the TrainJob tells them: the training container node (its image,
// command, env and resourcesPerNode, and its patch's mounts and security
// context), in the pod its runtime patch of the replicated job node gives
// (the runtime's own fields, which the Trainer adds, are not here).
func trainJobPodSets(obj map[string]any) ([]PodSet, error) {
	trainer := mapAt(obj, "spec", "trainer")
	var pod corev1.PodTemplateSpec
	for _, p := range sliceAt(obj, "spec", "runtimePatches") {
		patch, _ := p.(map[string]any)
		for _, j := range sliceAt(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs") {
			job, _ := j.(map[string]any)
			if stringAt(job, "name") != "node" {
				continue
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mapAt(job, "template", "spec", "template"), &pod); err != nil {
				return nil, fmt.Errorf("spec.runtimePatches: %w", err)
			}
		}
	}
	var node corev1.Container
	for _, c := range pod.Spec.Containers {
		if c.Name == "node" {
			node = c
		}
	}
	var fromTrainer corev1.Container
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(trainer, &fromTrainer); err != nil {
		return nil, fmt.Errorf("spec.trainer: %w", err)
	}
	resources, _ := trainer["resourcesPerNode"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(resources, &node.Resources); err != nil {
		return nil, fmt.Errorf("spec.trainer.resourcesPerNode: %w", err)
	}
	node.Name, node.Image, node.Command, node.Args, node.Env = "node", fromTrainer.Image, fromTrainer.Command, fromTrainer.Args, fromTrainer.Env
	pod.Spec.Containers = []corev1.Container{node}
	return []PodSet{{Name: "node", Count: Count(trainer, "numNodes"), Meta: pod.ObjectMeta, Pod: pod.Spec}}, nil
}
