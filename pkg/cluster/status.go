package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	settingsschema "github.com/torchwrap/generator/schema"
)

// The resources that status reads, beside the jobs' (kinds).
var (
	pods   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	events = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	// Kueue's visibility API: the pendingworkloads of a LocalQueue.
	visibleQueues = schema.GroupVersionResource{Group: "visibility.kueue.x-k8s.io", Version: "v1beta1", Resource: "localqueues"}
)

// Ref names a submitted job.
type Ref struct {
	Kind, Namespace, Name string
}

// Ref names the job as it is submitted.
func (j *Job) Ref() Ref {
	return Ref{Kind: j.Object.GetKind(), Namespace: j.Object.GetNamespace(), Name: j.Object.GetName()}
}

func (r Ref) String() string {
	return fmt.Sprintf("%s %q in namespace %q", r.Kind, r.Name, r.Namespace)
}

func (r Ref) resource() schema.GroupVersionResource {
	if k := kindNamed(r.Kind); k != nil {
		return k.resource
	}
	return schema.GroupVersionResource{}
}

// NotFound is the error for a job that is not (or no longer) in the cluster.
type NotFound struct{ Ref Ref }

func (e NotFound) Error() string { return fmt.Sprintf("no %s", e.Ref) }

// State is where a submitted job is.
type State string

// The states of a job.
const (
	// Queued: waiting for Kueue to admit it (or for T9k's scheduler).
	Queued State = "Queued"
	// Admitted: nothing holds it back any more; its pods are starting, or
	// starting again after a failure.
	Admitted State = "Admitted"
	// Running: its pods run, as its controller sees them.
	Running State = "Running"
	// Suspended: held without being deleted (generator stop): its pods are
	// gone, its quota free, until it is resumed.
	Suspended State = "Suspended"
	Succeeded State = "Succeeded"
	Failed    State = "Failed"
	// Deleting: it is being deleted.
	Deleting State = "Deleting"
)

// States are the states a job can be in, in the order of its life.
var States = []State{Queued, Admitted, Running, Suspended, Succeeded, Failed, Deleting}

// Finished tells whether the job is done, and will not change any more.
func (s State) Finished() bool { return s == Succeeded || s == Failed }

// Status is the picture of a submitted job: its state, why it is there, its
// queue and its pods.
type Status struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	State     State  `json:"state"`
	// Phase is the job's own word for where it is, when it says more than
	// State: AppWrapper's Resetting, Suspending or Terminating, PyTorchJob's
	// and JobSet's Restarting, T9k's Paused.
	Phase string `json:"phase,omitempty"`
	// Reason and Message say why: Kueue's when the job waits, the job's own
	// when it failed or restarts.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Queue is the LocalQueue (for a bare T9k job, T9k's queue).
	Queue string `json:"queue,omitempty"`
	// ClusterQueue is the ClusterQueue that admitted the job.
	ClusterQueue string `json:"clusterQueue,omitempty"`
	// Workload is the Kueue Workload of the job.
	Workload string `json:"workload,omitempty"`
	// Position is the job's place in its LocalQueue, 1 for the next to be
	// admitted; 0 when Kueue's visibility API does not tell.
	Position int64 `json:"position,omitempty"`
	Pods     Pods  `json:"pods"`
	// Retries is how many times the job was reset after a failure
	// (AppWrapper's resettingCount, JobSet's restarts, T9k's backoffCount).
	Retries int64 `json:"retries,omitempty"`
	// GPUs are the GPUs (nvidia.com/gpu) the whole job requests.
	GPUs int64 `json:"gpus"`
	// Created is when the job was created.
	Created time.Time `json:"created,omitzero"`
	// Generator is the version of the chart that rendered the job, from
	// its marker annotation (torchwrap.dev/generator-version); "" for a
	// job made otherwise.
	Generator string `json:"generator,omitempty"`
	// FailedPod is a pod that failed.
	FailedPod *FailedPod `json:"failedPod,omitempty"`
	// Warnings are the recent Warning events of the job's objects and pods,
	// the latest first (status only).
	Warnings []Event `json:"warnings,omitempty"`
	// Notes say what could not be read.
	Notes []string `json:"notes,omitempty"`
}

// Marker is the annotation the chart puts on every object it renders,
// valued with its version: list shows the jobs that carry it.
const Marker = "torchwrap.dev/generator-version"

// Pods counts a job's pods by phase.
type Pods struct {
	// Expected is the job's pod count.
	Expected  int64 `json:"expected"`
	Pending   int   `json:"pending"`
	Running   int   `json:"running"`
	Ready     int   `json:"ready"`
	Succeeded int   `json:"succeeded"`
	Failed    int   `json:"failed"`
	// Restarts are the restarts of the pods' containers, added up.
	Restarts int `json:"restarts"`
	// Problem is what keeps a pod from starting: no node for it, an image
	// that cannot be pulled, a container that crashes over and over.
	Problem string `json:"problem,omitempty"`
}

// FailedPod is a pod that failed, with its failing container's exit code
// when it shows one.
type FailedPod struct {
	Pod       string `json:"pod"`
	Container string `json:"container,omitempty"`
	ExitCode  *int32 `json:"exitCode,omitempty"`
	// Reason is the container's (Error, OOMKilled) or the pod's (Evicted).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Find finds a submitted job by its name, in the order of kinds: an
// AppWrapper first, then a TrainJob, then a job submitted alone. The error
// is NoSuchJob when there is none of that name, Unreachable when the
// cluster does not answer.
func (c *Client) Find(ctx context.Context, namespace, name string) (Ref, error) {
	var looked, unserved, forbidden []string
	for _, k := range kinds {
		_, err := c.Dynamic.Resource(k.resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return Ref{Kind: k.name, Namespace: namespace, Name: name}, nil
		case c.reachable(err) != nil:
			return Ref{}, c.reachable(err)
		case apierrors.IsNotFound(err) && !c.hasResource(ctx, k.resource):
			unserved = append(unserved, plural(k.name))
		case apierrors.IsNotFound(err):
			looked = append(looked, k.name)
		case apierrors.IsForbidden(err):
			forbidden = append(forbidden, plural(k.name))
		default:
			return Ref{}, fmt.Errorf("looking for a %s %q in namespace %q: %w", k.name, name, namespace, err)
		}
	}
	msg := fmt.Sprintf("no job %q in namespace %q", name, namespace)
	if len(looked) > 0 {
		msg += ": no " + sentence(looked, "or") + " of that name"
	}
	if len(unserved) > 0 {
		msg += " (this cluster serves no " + sentence(unserved, "or") + ")"
	}
	if len(forbidden) > 0 {
		msg += "; you may not read " + sentence(forbidden, "or") + " there (RBAC)"
	}
	fix := "; check the name, and the namespace (-n NAMESPACE)"
	if len(looked) > 0 {
		list, closest := nameList(c.jobNames(ctx, namespace), name, "jobs")
		if list == "" {
			list = "there are no jobs here"
		}
		msg += "; " + list
		if closest != "" {
			fix = fmt.Sprintf("; did you mean %q? Otherwise check the namespace (-n NAMESPACE)", closest)
		}
	}
	return Ref{}, NoSuchJob{Namespace: namespace, Name: name, message: msg + fix}
}

// NoSuchJob is the error of Find for a name no job has.
type NoSuchJob struct {
	Namespace, Name string
	message         string
}

func (e NoSuchJob) Error() string { return e.message }

// jobNames are the names of the jobs in a namespace, of every kind the
// cluster serves and lets the user list.
func (c *Client) jobNames(ctx context.Context, namespace string) []string {
	seen := map[string]bool{}
	var names []string
	for _, k := range kinds {
		list, err := c.Dynamic.Resource(k.resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, item := range list.Items {
			if !seen[item.GetName()] {
				seen[item.GetName()] = true
				names = append(names, item.GetName())
			}
		}
	}
	return names
}

// nameList says which names there are, for the message of a missing one,
// "those here: a, b" (what is "those"): at most ten, and the closest to
// want; "" for none.
func nameList(names []string, want, what string) (list string, closest string) {
	names = slices.Clone(names)
	sort.Strings(names)
	lower := make([]string, len(names))
	for i, n := range names {
		lower[i] = strings.ToLower(n)
	}
	closest = settingsschema.Closest(want, names, lower)
	if len(names) == 0 {
		return "", ""
	}
	more := ""
	if len(names) > 10 {
		more = fmt.Sprintf(" and %d more", len(names)-10)
		names = names[:10]
	}
	return what + " here: " + strings.Join(names, ", ") + more, closest
}

// sentence writes words as a sentence does: "a, b or c".
func sentence(words []string, conjunction string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conjunction + " " + words[len(words)-1]
}

// Status reads the picture of a submitted job: the job, its Kueue Workload,
// its pods, its place in the queue when Kueue's visibility API answers, and
// its recent Warning events. What it may not read is in the Notes; the
// error is NotFound when the job is not there, Unreachable when the cluster
// does not answer.
func (c *Client) Status(ctx context.Context, ref Ref) (Status, error) {
	obj, err := c.get(ctx, ref)
	if err != nil {
		return Status{}, err
	}
	s, podList, wl, err := c.read(ctx, obj)
	if err != nil {
		return s, err
	}
	warnings, err := c.warnings(ctx, obj, wl, podList)
	if err := c.note(&s.Notes, "its events", err); err != nil {
		return s, err
	}
	s.Warnings = warnings
	return s, nil
}

// reading reads the picture of a job as Status does, without its events:
// what Follow reads every few seconds.
func (c *Client) reading(ctx context.Context, ref Ref) (Status, error) {
	obj, err := c.get(ctx, ref)
	if err != nil {
		return Status{}, err
	}
	s, _, _, err := c.read(ctx, obj)
	return s, err
}

// get reads a job: NotFound when it is not there.
func (c *Client) get(ctx context.Context, ref Ref) (*unstructured.Unstructured, error) {
	obj, err := c.Dynamic.Resource(ref.resource()).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, NotFound{Ref: ref}
	case err != nil && c.reachable(err) != nil:
		return nil, c.reachable(err)
	case err != nil:
		return nil, fmt.Errorf("reading the %s: %w", ref, err)
	}
	return obj, nil
}

// read reads the picture of a job read from the cluster, from its pods and
// Workload (given with it), and its place in the queue.
func (c *Client) read(ctx context.Context, obj *unstructured.Unstructured) (Status, []corev1.Pod, *workload, error) {
	var notes []string
	podList, err := c.podsOf(ctx, obj)
	if err := c.note(&notes, "its pods", err); err != nil {
		return Status{}, nil, nil, err
	}
	wl, err := c.workloadOf(ctx, obj)
	if err := c.note(&notes, "its Kueue Workload", err); err != nil {
		return Status{}, nil, nil, err
	}
	s, err := picture(obj, podList, wl)
	s.Notes = append(s.Notes, notes...)
	if err != nil {
		return s, nil, nil, err
	}
	c.place(ctx, &s)
	return s, podList, wl, nil
}

// place gives a queued job its position in its LocalQueue, where Kueue's
// visibility API answers.
func (c *Client) place(ctx context.Context, s *Status) {
	if s.State == Queued && s.Workload != "" && s.Queue != "" {
		positions, _ := c.positions(ctx, s.Namespace, s.Queue)
		s.Position = positions[s.Workload]
	}
}

// picture is the status of a job from what was read of it: the job, its
// pods and its Kueue Workload (nil for none).
func picture(obj *unstructured.Unstructured, podList []corev1.Pod, wl *workload) (Status, error) {
	k := kindOf(obj)
	s := Status{Kind: obj.GetKind(), Name: obj.GetName(), Namespace: obj.GetNamespace(), Queue: obj.GetLabels()[QueueLabel],
		Created: obj.GetCreationTimestamp().Time, Generator: obj.GetAnnotations()[Marker]}
	if job, err := JobOf(obj); err == nil {
		s.Pods.Expected = job.Pods()
		gpus := job.Requests()["nvidia.com/gpu"]
		s.GPUs = gpus.Value()
	}
	if err := k.state(&s, obj); err != nil {
		return s, fmt.Errorf("reading the status of %s %q: %w", s.Kind, s.Name, err)
	}
	s.fromPods(podList)
	// The controller's word may lag behind the pods (AppWrapper looks at
	// them every few seconds), or not be said (JobSet, TrainJob): a job
	// whose pods are all ready, or done with success, is running.
	if s.State == Admitted && s.Phase == "" && s.Pods.Expected > 0 && int64(s.Pods.Ready+s.Pods.Succeeded) == s.Pods.Expected {
		s.State = Running
	}
	s.fromWorkload(wl, obj.GetLabels()[QueueLabel] != "")
	if !s.State.Finished() {
		s.fromHold(obj, k, wl)
	}
	if obj.GetDeletionTimestamp() != nil {
		s.State = Deleting
	}
	return s, nil
}

// fromHold says whether the job is held (generator stop): its Workload is
// inactive, or, for a job Kueue does not manage, its own field holds it.
func (s *Status) fromHold(obj *unstructured.Unstructured, k *kind, wl *workload) {
	resume := fmt.Sprintf("generator resume %s -n %s", s.Name, s.Namespace)
	switch {
	case wl != nil && wl.Spec.Active != nil && !*wl.Spec.Active:
		s.State, s.Reason = Suspended, "Deactivated"
		s.Message = fmt.Sprintf("its Kueue Workload %s is inactive (spec.active: false); %s queues it again", wl.Name, resume)
	case wl == nil && k.suspended(obj) && (obj.GetAnnotations()[stoppedAnnotation] != "" || s.Queue == "" || !k.kueue):
		// With the queue label, Kueue holds a job it has not admitted
		// yet by the same field: that job is queued, unless stop held it.
		s.State = Suspended
		s.Message = fmt.Sprintf("%s is true; %s runs it again", strings.Join(k.suspend, "."), resume)
	}
}

// note records what could not be read; the error is Unreachable when the
// cluster did not answer.
func (c *Client) note(notes *[]string, what string, err error) error {
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case c.reachable(err) != nil:
		return c.reachable(err)
	case apierrors.IsForbidden(err):
		*notes = append(*notes, what+": you may not read them (RBAC)")
	default:
		*notes = append(*notes, fmt.Sprintf("%s: %v", what, err))
	}
	return nil
}

// condition is a condition of a job or a Workload, of any of their types.
type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type conditions []condition

func (cs conditions) get(kind string) (condition, bool) {
	for _, c := range cs {
		if c.Type == kind {
			return c, true
		}
	}
	return condition{}, false
}

func (cs conditions) isTrue(kind string) bool {
	c, _ := cs.get(kind)
	return c.Status == string(metav1.ConditionTrue)
}

// lastTrue is the last condition that holds.
func (cs conditions) lastTrue() condition {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Status == string(metav1.ConditionTrue) {
			return cs[i]
		}
	}
	return condition{}
}

// decode reads the map at path below obj into out.
func decode(obj map[string]any, out any, path ...string) error {
	m, _, err := unstructured.NestedMap(obj, path...)
	if err != nil || m == nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, out)
}

// fromAppWrapper reads the state from an AppWrapper's phase and conditions.
func (s *Status) fromAppWrapper(obj *unstructured.Unstructured) error {
	var st struct {
		Phase          string     `json:"phase"`
		ResettingCount int64      `json:"resettingCount"`
		Conditions     conditions `json:"conditions"`
	}
	if err := decode(obj.Object, &st, "status"); err != nil {
		return err
	}
	s.Retries = st.ResettingCount
	unhealthy, _ := st.Conditions.get("Unhealthy")
	why := func() {
		if unhealthy.Status == string(metav1.ConditionTrue) {
			s.Reason, s.Message = unhealthy.Reason, unhealthy.Message
		}
	}
	switch st.Phase {
	case "Succeeded":
		s.State = Succeeded
	case "Failed":
		s.State = Failed
		why()
	case "Running":
		s.State = Admitted
		if st.Conditions.isTrue("PodsReady") {
			s.State = Running
		}
	case "Resuming":
		s.State = Admitted
	case "Resetting":
		s.State, s.Phase = Admitted, st.Phase
		why()
	case "Suspending":
		// Kueue took the quota back: preempted, or evicted.
		s.State, s.Phase = Queued, st.Phase
	case "Terminating":
		s.State, s.Phase = Deleting, st.Phase
	default:
		// Suspended, or not yet seen by its controller.
		s.State = Queued
	}
	return nil
}

// names are the types of a kind's conditions that say it succeeded, that
// it restarts after a failure, and that it runs; "" for one it does not
// have. Every kind says Failed and Suspended.
type names struct{ succeeded, restarting, running string }

// conditionsNamed reads the state of a bare PyTorchJob, JobSet or TrainJob
// from its conditions of those names, and a JobSet's restarts.
func conditionsNamed(names names) func(*Status, *unstructured.Unstructured) error {
	return func(s *Status, obj *unstructured.Unstructured) error { return s.fromConditions(obj, names) }
}

func (s *Status) fromConditions(obj *unstructured.Unstructured, names names) error {
	var st struct {
		Conditions conditions `json:"conditions"`
		Restarts   int64      `json:"restarts"`
	}
	if err := decode(obj.Object, &st, "status"); err != nil {
		return err
	}
	s.Retries = st.Restarts
	cs := st.Conditions
	switch {
	case cs.isTrue(names.succeeded):
		s.State = Succeeded
	case cs.isTrue("Failed"):
		c, _ := cs.get("Failed")
		s.State, s.Reason, s.Message = Failed, c.Reason, c.Message
	case kindOf(obj).suspended(obj) || cs.isTrue("Suspended"):
		s.State = Queued
	case cs.isTrue(names.restarting):
		c, _ := cs.get(names.restarting)
		s.State, s.Phase, s.Reason, s.Message = Admitted, "Restarting", c.Reason, c.Message
	case cs.isTrue(names.running):
		s.State = Running
	default:
		s.State = Admitted
	}
	return nil
}

// t9kStatus is the status of T9k's PyTorchTrainingJob and DeepSpeedJob.
type t9kStatus struct {
	Phase        string     `json:"phase"`
	BackoffCount int64      `json:"backoffCount"`
	Conditions   conditions `json:"conditions"`
	Tasks        []struct {
		Type     string `json:"type"`
		Replicas []struct {
			Name       string `json:"name"`
			Containers []struct {
				Name     string `json:"name"`
				ExitCode int32  `json:"exitCode"`
			} `json:"containers"`
		} `json:"replicaStatus"`
	} `json:"tasks"`
}

// fromT9k reads the state from a bare T9k job's phase. T9k's jobs are not
// queued by Kueue: one waits when T9k's scheduler holds it.
func (s *Status) fromT9k(obj *unstructured.Unstructured) error {
	var st t9kStatus
	if err := decode(obj.Object, &st, "status"); err != nil {
		return err
	}
	s.Retries = st.BackoffCount
	switch st.Phase {
	case "Succeeded":
		s.State = Succeeded
	case "Failed":
		s.State = Failed
		c, ok := st.Conditions.get("Failed")
		if !ok {
			c = st.Conditions.lastTrue()
		}
		s.Reason, s.Message = c.Reason, c.Message
		// Its pods may be gone; its status keeps their exit codes.
		s.FailedPod = st.failedReplica()
	case "Running":
		s.State = Running
	case "Paused", "Resuming", "Unknown":
		s.State, s.Phase = Admitted, st.Phase
	default:
		s.State = Admitted
		if queue, _, _ := unstructured.NestedString(obj.Object, "spec", "scheduler", "t9kScheduler", "queue"); queue != "" {
			s.State, s.Queue = Queued, queue
		}
	}
	return nil
}

// failedReplica is the first replica whose container exited with an error.
func (st t9kStatus) failedReplica() *FailedPod {
	for _, task := range st.Tasks {
		for _, r := range task.Replicas {
			for _, c := range r.Containers {
				if c.ExitCode != 0 {
					return &FailedPod{Pod: task.Type + " " + r.Name, Container: c.Name, ExitCode: &c.ExitCode}
				}
			}
		}
	}
	return nil
}

// podsOf lists a job's pods: by the label its controller gives them, or (T9k)
// by their owner.
func (c *Client) podsOf(ctx context.Context, obj *unstructured.Unstructured) ([]corev1.Pod, error) {
	k := kindOf(obj)
	list, err := c.Dynamic.Resource(pods).Namespace(obj.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: k.selector(obj.GetName())})
	if err != nil {
		return nil, err
	}
	all, err := podsIn(list)
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, pod := range all {
		if k.owns(obj, &pod) {
			out = append(out, pod)
		}
	}
	return out, nil
}

// podsIn reads the pods of a list, sorted by name.
func podsIn(list *unstructured.UnstructuredList) ([]corev1.Pod, error) {
	out := make([]corev1.Pod, 0, len(list.Items))
	for _, item := range list.Items {
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &pod); err != nil {
			return nil, fmt.Errorf("reading pod %s: %w", item.GetName(), err)
		}
		out = append(out, pod)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func ownedBy(obj, owner *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// fromPods counts the pods, and finds a failed one (which tells more than
// what the job's status keeps) and what keeps the others from starting.
func (s *Status) fromPods(list []corev1.Pod) {
	found := false
	for _, pod := range list {
		switch pod.Status.Phase {
		case corev1.PodPending:
			s.Pods.Pending++
		case corev1.PodRunning:
			s.Pods.Running++
			if ready(pod) {
				s.Pods.Ready++
			}
		case corev1.PodSucceeded:
			s.Pods.Succeeded++
		case corev1.PodFailed:
			s.Pods.Failed++
		}
		for _, c := range pod.Status.ContainerStatuses {
			s.Pods.Restarts += int(c.RestartCount)
		}
		if s.Pods.Problem == "" {
			s.Pods.Problem = problem(pod)
		}
		if f := failure(pod); f != nil && !found {
			s.FailedPod, found = f, true
		}
	}
}

func ready(pod corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// failure is the failure a pod shows: a container that exited with an
// error, else the pod's own reason when it failed.
func failure(pod corev1.Pod) *FailedPod {
	for _, c := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
			return &FailedPod{Pod: pod.Name, Container: c.Name, ExitCode: &t.ExitCode, Reason: t.Reason, Message: t.Message}
		}
	}
	if pod.Status.Phase == corev1.PodFailed {
		return &FailedPod{Pod: pod.Name, Reason: pod.Status.Reason, Message: pod.Status.Message}
	}
	return nil
}

// problem is what keeps a pod from running: no node for it, or a container
// that waits for a reason other than being created.
func problem(pod corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return fmt.Sprintf("pod %s cannot be scheduled: %s", pod.Name, c.Message)
		}
	}
	for _, c := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if w := c.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			msg := fmt.Sprintf("pod %s, container %s: %s", pod.Name, c.Name, w.Reason)
			if w.Message != "" {
				msg += ": " + w.Message
			}
			return msg
		}
	}
	return ""
}

// workload is the part of a Kueue Workload that status reads.
type workload struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		QueueName string `json:"queueName"`
		// Active is false for a Workload held (kueuectl stop workload,
		// generator stop); nil is true.
		Active *bool `json:"active"`
	} `json:"spec"`
	Status struct {
		Conditions conditions `json:"conditions"`
		Admission  struct {
			ClusterQueue string `json:"clusterQueue"`
		} `json:"admission"`
	} `json:"status"`
}

// workloadOf finds the Kueue Workload of a job: the one it owns. None when
// Kueue has made none (yet), or is not installed.
func (c *Client) workloadOf(ctx context.Context, obj *unstructured.Unstructured) (*workload, error) {
	owned, err := c.workloads(ctx, obj.GetNamespace())
	return owned[obj.GetUID()], err
}

// workloads lists the Workloads of a namespace ("": of all), by the uid of
// the job that owns each.
func (c *Client) workloads(ctx context.Context, namespace string) (map[types.UID]*workload, error) {
	list, err := c.Dynamic.Resource(c.kueue(ctx, "workloads")).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	owned := map[types.UID]*workload{}
	for _, item := range list.Items {
		var wl workload
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &wl); err != nil {
			return nil, fmt.Errorf("reading Workload %s: %w", item.GetName(), err)
		}
		for _, ref := range wl.OwnerReferences {
			owned[ref.UID] = &wl
		}
	}
	return owned, nil
}

// fromWorkload adds what Kueue says: the queue, and why a job waits.
// queued tells whether the job names a LocalQueue.
func (s *Status) fromWorkload(wl *workload, queued bool) {
	if wl == nil {
		if s.State == Queued && queued {
			s.Message = "Kueue has not made a Workload for it yet"
		}
		return
	}
	s.Workload = wl.Name
	if s.Queue == "" {
		s.Queue = wl.Spec.QueueName
	}
	s.ClusterQueue = wl.Status.Admission.ClusterQueue
	cs := wl.Status.Conditions
	if s.State == Queued && cs.isTrue("Admitted") && !cs.isTrue("Evicted") {
		// Kueue admitted it; its controller has not started it yet.
		s.State = Admitted
	}
	switch s.State {
	case Queued:
		s.Reason, s.Message = waiting(cs)
	case Failed:
		if c, ok := cs.get("Finished"); ok && s.Reason == "" && s.Message == "" {
			s.Reason, s.Message = c.Reason, c.Message
		}
	}
}

// waiting says why Kueue holds a Workload back: evicted (preempted,
// deactivated), waiting to be queued again, no quota for it yet, or
// admission checks.
func waiting(cs conditions) (reason, message string) {
	if c, ok := cs.get("Evicted"); ok && c.Status == string(metav1.ConditionTrue) {
		return c.Reason, c.Message
	}
	if c, ok := cs.get("Requeued"); ok && c.Status == string(metav1.ConditionFalse) {
		return c.Reason, c.Message
	}
	if c, ok := cs.get("QuotaReserved"); ok && c.Status != string(metav1.ConditionTrue) {
		return c.Reason, c.Message
	}
	if c, ok := cs.get("Admitted"); ok && c.Status != string(metav1.ConditionTrue) {
		return c.Reason, c.Message
	}
	if _, ok := cs.get("QuotaReserved"); !ok {
		return "", "Kueue has not looked at its Workload yet"
	}
	return "", ""
}

// positions asks Kueue's visibility API for the places of the Workloads
// pending in a LocalQueue, 1 for the next to be admitted; the error says
// why it did not answer (the API is off, or not allowed).
func (c *Client) positions(ctx context.Context, namespace, queue string) (map[string]int64, error) {
	summary, err := c.Dynamic.Resource(visibleQueues).Namespace(namespace).Get(ctx, queue, metav1.GetOptions{}, "pendingworkloads")
	if err != nil {
		return nil, err
	}
	var pending struct {
		Items []struct {
			metav1.ObjectMeta    `json:"metadata"`
			PositionInLocalQueue int64 `json:"positionInLocalQueue"`
		} `json:"items"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(summary.Object, &pending); err != nil {
		return nil, err
	}
	places := map[string]int64{}
	for _, item := range pending.Items {
		places[item.Name] = item.PositionInLocalQueue + 1
	}
	return places, nil
}
