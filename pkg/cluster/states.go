package cluster

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/torchwrap/generator/pkg/failure"
)

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
	v, _, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || v == nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s is %T, not an object", strings.Join(path, "."), v)
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
		s.Failure = st.failedReplica()
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
func (st t9kStatus) failedReplica() *failure.Failure {
	for _, task := range st.Tasks {
		for _, r := range task.Replicas {
			for _, c := range r.Containers {
				if c.ExitCode != 0 {
					// T9k names a replica by its index, not its pod's name.
					code, member := c.ExitCode, strings.ToLower(task.Type)+"-"+r.Name
					return &failure.Failure{Key: member + "/" + c.Name, Member: member, Container: c.Name, Reason: "Error", ExitCode: &code}
				}
			}
		}
	}
	return nil
}

// fromPods counts the pods, and finds the failures they show (the root
// cause of them, which tells more than what the job's status keeps) and
// what keeps the others from starting.
func (s *Status) fromPods(obj *unstructured.Unstructured, list []corev1.Pod) {
	var failed failure.Attempt
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
		for _, f := range failure.FromPod(&pod, memberOf(obj, &pod)) {
			// A pod that waits for its image is a problem, said as one.
			if !f.Waiting() {
				failed.Failures = append(failed.Failures, f)
			}
		}
	}
	if root, ok := failed.Root(); ok {
		s.Failure = &root
	}
}

// memberOf is a pod's place in its job, as generator logs labels it; ""
// when the pod does not say.
func memberOf(obj *unstructured.Unstructured, pod *corev1.Pod) string {
	if m, known := kindOf(obj).member(obj.Object, pod); known {
		return m.String()
	}
	return ""
}

func ready(pod corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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

// workload is the part of a Kueue Workload that status reads: of its
// metadata, its names and owners, not what is most of its bytes (its
// managedFields), which a list of thousands would read for nothing.
type workload struct {
	workloadMeta `json:"metadata"`
	Spec         struct {
		QueueName string `json:"queueName"`
		// Active is false for a Workload held (kueuectl stop workload,
		// generator stop); nil is true.
		Active *bool `json:"active"`
		// Priority is its priority, PriorityClassName (v1beta1) or
		// PriorityClassRef (v1beta2) the class it comes from.
		Priority          *int32 `json:"priority"`
		PriorityClassName string `json:"priorityClassName"`
		PriorityClassRef  *struct {
			Name string `json:"name"`
		} `json:"priorityClassRef"`
	} `json:"spec"`
	Status struct {
		Conditions conditions `json:"conditions"`
		Admission  struct {
			ClusterQueue string `json:"clusterQueue"`
		} `json:"admission"`
		// ClusterName is the worker cluster a MultiKueue manager
		// dispatched the Workload to.
		ClusterName string `json:"clusterName"`
		// NominatedClusterNames are the worker clusters it offered the
		// Workload to, none of which has admitted it yet.
		NominatedClusterNames []string `json:"nominatedClusterNames"`
	} `json:"status"`
	// Placed is true for a Workload known from its LocalQueue alone
	// (Kueue's visibility API lists it pending there): its name, owners
	// and queue; its spec and status were not read.
	Placed bool `json:"-"`
}

type workloadMeta struct {
	Name            string                  `json:"name"`
	Namespace       string                  `json:"namespace"`
	UID             types.UID               `json:"uid"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
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
		s.Reason, s.Message = waiting(wl)
	case Failed:
		if c, ok := cs.get("Finished"); ok && s.Reason == "" && s.Message == "" {
			s.Reason, s.Message = c.Reason, c.Message
		}
	}
}

// waiting says why Kueue holds a Workload back: evicted (preempted,
// deactivated), waiting to be queued again, no quota for it yet, or
// admission checks. Kueue leaves a Workload deactivated then reactivated
// (generator stop, then resume) Evicted for its deactivation, which no
// longer holds it.
func waiting(wl *workload) (reason, message string) {
	if wl.Placed {
		return "", ""
	}
	cs := wl.Status.Conditions
	reactivated := wl.Spec.Active == nil || *wl.Spec.Active
	if c, ok := cs.get("Evicted"); ok && c.Status == string(metav1.ConditionTrue) && !(c.Reason == "Deactivated" && reactivated) {
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
