package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resources that status reads.
var (
	appWrappers   = schema.GroupVersionResource{Group: "workload.codeflare.dev", Version: "v1beta2", Resource: "appwrappers"}
	pyTorchJobs   = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	trainingJobs  = schema.GroupVersionResource{Group: "batch.tensorstack.dev", Version: "v1beta1", Resource: "pytorchtrainingjobs"}
	deepSpeedJobs = schema.GroupVersionResource{Group: "batch.tensorstack.dev", Version: "v1beta1", Resource: "deepspeedjobs"}
	jobSets       = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	trainJobs     = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	pods          = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	// Kueue's visibility API: the pendingworkloads of a LocalQueue.
	visibleQueues = schema.GroupVersionResource{Group: "visibility.kueue.x-k8s.io", Version: "v1beta1", Resource: "localqueues"}
)

// jobKinds are the kinds a job is submitted as, in the order status looks
// for a name: what makes a job of the same name before it (the AppWrapper
// its component, a TrainJob its JobSet), then the jobs submitted alone.
var jobKinds = []struct {
	kind     string
	resource schema.GroupVersionResource
}{
	{"AppWrapper", appWrappers},
	{"TrainJob", trainJobs},
	{"PyTorchJob", pyTorchJobs},
	{"JobSet", jobSets},
	{"PyTorchTrainingJob", trainingJobs},
	{"DeepSpeedJob", deepSpeedJobs},
}

// The labels that mark a job's pods.
const (
	appWrapperLabel = "workload.codeflare.dev/appwrapper"
	pyTorchJobLabel = "training.kubeflow.org/job-name"
	// jobSetLabel marks the pods of a JobSet, and of a TrainJob: the
	// Trainer makes a JobSet of the TrainJob's name.
	jobSetLabel = "jobset.sigs.k8s.io/jobset-name"
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
	for _, k := range jobKinds {
		if k.kind == r.Kind {
			return k.resource
		}
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
	Running   State = "Running"
	Succeeded State = "Succeeded"
	Failed    State = "Failed"
	// Deleting: it is being deleted.
	Deleting State = "Deleting"
)

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
	// FailedPod is a pod that failed.
	FailedPod *FailedPod `json:"failedPod,omitempty"`
	// Notes say what could not be read.
	Notes []string `json:"notes,omitempty"`
}

// Pods counts a job's pods by phase.
type Pods struct {
	// Expected is the job's pod count.
	Expected  int64 `json:"expected"`
	Pending   int   `json:"pending"`
	Running   int   `json:"running"`
	Ready     int   `json:"ready"`
	Succeeded int   `json:"succeeded"`
	Failed    int   `json:"failed"`
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

// Find finds a submitted job by its name, in the order of jobKinds: an
// AppWrapper first, then a TrainJob, then a job submitted alone.
func (c *Client) Find(ctx context.Context, namespace, name string) (Ref, error) {
	var looked, unserved, forbidden []string
	for _, k := range jobKinds {
		_, err := c.Dynamic.Resource(k.resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return Ref{Kind: k.kind, Namespace: namespace, Name: name}, nil
		case c.reachable(err) != nil:
			return Ref{}, c.reachable(err)
		case apierrors.IsNotFound(err) && !c.hasResource(ctx, k.resource):
			unserved = append(unserved, plural(k.kind))
		case apierrors.IsNotFound(err):
			looked = append(looked, k.kind)
		case apierrors.IsForbidden(err):
			forbidden = append(forbidden, plural(k.kind))
		default:
			return Ref{}, fmt.Errorf("looking for a %s %q in namespace %q: %w", k.kind, name, namespace, err)
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
	return Ref{}, errors.New(msg + "; check the name, and the namespace (-n NAMESPACE)")
}

// sentence writes words as a sentence does: "a, b or c".
func sentence(words []string, conjunction string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conjunction + " " + words[len(words)-1]
}

// Status reads the picture of a submitted job: the job, its Kueue Workload,
// its pods, and its place in the queue when Kueue's visibility API answers.
// What it may not read is in the Notes; the error is NotFound when the job is
// not there, Unreachable when the cluster does not answer.
func (c *Client) Status(ctx context.Context, ref Ref) (Status, error) {
	obj, err := c.Dynamic.Resource(ref.resource()).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Status{}, NotFound{Ref: ref}
	case err != nil && c.reachable(err) != nil:
		return Status{}, c.reachable(err)
	case err != nil:
		return Status{}, fmt.Errorf("reading the %s: %w", ref, err)
	}
	return c.statusOf(ctx, obj)
}

// statusOf reads the picture of a job read from the cluster.
func (c *Client) statusOf(ctx context.Context, obj *unstructured.Unstructured) (Status, error) {
	s := Status{Kind: obj.GetKind(), Name: obj.GetName(), Namespace: obj.GetNamespace(), Queue: obj.GetLabels()[QueueLabel]}
	s.Pods.Expected = expectedPods(obj)
	var err error
	switch s.Kind {
	case "AppWrapper":
		err = s.fromAppWrapper(obj)
	case "PyTorchJob":
		err = s.fromConditions(obj, names{succeeded: "Succeeded", restarting: "Restarting", running: "Running"})
	case "JobSet":
		err = s.fromConditions(obj, names{succeeded: "Completed", restarting: "RestartingJobSet"})
	case "TrainJob":
		// The Trainer copies its JobSet's Completed (as Complete) and Failed.
		err = s.fromConditions(obj, names{succeeded: "Complete"})
	default:
		err = s.fromT9k(obj)
	}
	if err != nil {
		return s, fmt.Errorf("reading the status of %s %q: %w", s.Kind, s.Name, err)
	}
	podList, err := c.podsOf(ctx, obj)
	if err := c.note(&s, "its pods", err); err != nil {
		return s, err
	}
	s.fromPods(podList)
	// The controller's word may lag behind the pods (AppWrapper looks at
	// them every few seconds), or not be said (JobSet, TrainJob): a job
	// whose pods are all ready, or done with success, is running.
	if s.State == Admitted && s.Phase == "" && s.Pods.Expected > 0 && int64(s.Pods.Ready+s.Pods.Succeeded) == s.Pods.Expected {
		s.State = Running
	}
	wl, err := c.workloadOf(ctx, obj)
	if err := c.note(&s, "its Kueue Workload", err); err != nil {
		return s, err
	}
	s.fromWorkload(wl, obj.GetLabels()[QueueLabel] != "")
	if s.State == Queued && s.Workload != "" && s.Queue != "" {
		s.Position = c.position(ctx, s.Namespace, s.Queue, s.Workload)
	}
	if obj.GetDeletionTimestamp() != nil {
		s.State = Deleting
	}
	return s, nil
}

// note records what could not be read; the error is Unreachable when the
// cluster did not answer.
func (c *Client) note(s *Status, what string, err error) error {
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case c.reachable(err) != nil:
		return c.reachable(err)
	case apierrors.IsForbidden(err):
		s.Notes = append(s.Notes, what+": you may not read them (RBAC)")
	default:
		s.Notes = append(s.Notes, fmt.Sprintf("%s: %v", what, err))
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

// fromConditions reads the state from the conditions of a bare PyTorchJob,
// JobSet or TrainJob, and a JobSet's restarts.
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
	case suspended(obj) || cs.isTrue("Suspended"):
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

// expectedPods is the pod count of a job read from the cluster.
func expectedPods(obj *unstructured.Unstructured) int64 {
	var n int64
	switch obj.GetKind() {
	case "PyTorchTrainingJob":
		specs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "replicaSpecs")
		for _, spec := range specs {
			m, _ := spec.(map[string]any)
			n += number(m, "replicas")
		}
	case "DeepSpeedJob":
		worker, _, _ := unstructured.NestedMap(obj.Object, "spec", "worker")
		n = number(worker, "replicas")
	default:
		if job, err := JobOf(obj); err == nil {
			n = job.Pods()
		}
	}
	return n
}

// podsOf lists a job's pods: by the label its controller gives them, or (T9k)
// by their owner.
func (c *Client) podsOf(ctx context.Context, obj *unstructured.Unstructured) ([]corev1.Pod, error) {
	selector := podSelector(obj.GetKind(), obj.GetName())
	list, err := c.Dynamic.Resource(pods).Namespace(obj.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, item := range list.Items {
		if selector == "" && !ownedBy(&item, obj) {
			continue
		}
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &pod); err != nil {
			return nil, fmt.Errorf("reading pod %s: %w", item.GetName(), err)
		}
		out = append(out, pod)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// podSelector selects the pods of a job by the label its controller puts on
// them; "" for a kind whose pods are found by their owner instead.
func podSelector(kind, name string) string {
	switch kind {
	case "AppWrapper":
		return appWrapperLabel + "=" + name
	case "PyTorchJob":
		return pyTorchJobLabel + "=" + name
	case "JobSet", "TrainJob":
		return jobSetLabel + "=" + name
	}
	return ""
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
	list, err := c.Dynamic.Resource(c.kueue(ctx, "workloads")).Namespace(obj.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, item := range list.Items {
		if ownedBy(&item, obj) {
			var wl workload
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &wl); err != nil {
				return nil, fmt.Errorf("reading Workload %s: %w", item.GetName(), err)
			}
			return &wl, nil
		}
	}
	return nil, nil
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

// position asks Kueue's visibility API for a Workload's place in its
// LocalQueue; 0 when it does not answer (the API is off, or not allowed).
func (c *Client) position(ctx context.Context, namespace, queue, name string) int64 {
	summary, err := c.Dynamic.Resource(visibleQueues).Namespace(namespace).Get(ctx, queue, metav1.GetOptions{}, "pendingworkloads")
	if err != nil {
		return 0
	}
	var pending struct {
		Items []struct {
			metav1.ObjectMeta    `json:"metadata"`
			PositionInLocalQueue int64 `json:"positionInLocalQueue"`
		} `json:"items"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(summary.Object, &pending); err != nil {
		return 0
	}
	for _, item := range pending.Items {
		if item.Name == name {
			return item.PositionInLocalQueue + 1
		}
	}
	return 0
}
