package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"

	"github.com/torchwrap/generator/pkg/accelerator"
	"github.com/torchwrap/generator/pkg/failure"
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

// NotServed is the error for a job of a kind the cluster does not serve:
// its CRD is not installed.
type NotServed struct {
	Kind     string
	Resource schema.GroupVersionResource
}

func (e NotServed) Error() string {
	return fmt.Sprintf("this cluster does not serve %s (%s): %s is not installed, so there is no such job here; check --context, or ask an administrator to install it",
		Plural(e.Kind), e.Resource.GroupVersion(), Operator(e.Kind))
}

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
	// GPUs are the accelerators the whole job requests, of GPUResource:
	// nvidia.com/gpu, or another that accelerator.Vendors knows.
	GPUs        int64  `json:"gpus"`
	GPUResource string `json:"gpuResource,omitempty"`
	// Workspace is the folder shipped with the job, if any, as its
	// annotations say.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Created is when the job was created.
	Created time.Time `json:"created,omitzero"`
	// Setup are the setup commands that failed in the pods there are, as
	// the start of their logs says (Status only).
	Setup []failure.SetupError `json:"setup,omitempty"`
	// Output is the last line rank 0 wrote, of a running job (status
	// only).
	Output *Output `json:"output,omitempty"`
	// Generator is the version of the chart that rendered the job, from
	// its marker annotation (torchwrap.dev/generator-version); "" for a
	// job made otherwise.
	Generator string `json:"generator,omitempty"`
	// Failure is the root cause of the failures its pods show (or, for a
	// T9k job, its status keeps); or the refusal of its pods, which never
	// ran, in the attempt it is in.
	Failure *failure.Failure `json:"failure,omitempty"`
	// Refusal is that refusal when it will refuse the pods every time (a
	// guard that judges a pod alone, a quota below what the whole job asks
	// for): a follower ends on it, as on a job that failed.
	Refusal *failure.Failure `json:"refusal,omitempty"`
	// Attempts are the failed attempts of the job kept on this machine
	// (Client.Keeper), the first first; Unseen the numbers of those that
	// failed with nothing kept (status only).
	Attempts []failure.Attempt `json:"attempts,omitempty"`
	Unseen   []int             `json:"unseen,omitempty"`
	// Warnings are the recent Warning events of the job's objects and pods,
	// the latest first (status only).
	Warnings []Event `json:"warnings,omitempty"`
	// Worker is the worker cluster that runs the job, for a job a
	// MultiKueue manager dispatched.
	Worker *Worker `json:"worker,omitempty"`
	// Offered are the worker clusters a MultiKueue manager offered the job
	// to while none has admitted it, each with why it waits there.
	Offered []Worker `json:"offered,omitempty"`
	// Notes say what could not be read.
	Notes []string `json:"notes,omitempty"`

	// holder is the client of the cluster that holds the job's pods (nil
	// when not read, or not reached).
	holder *Client
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
	// Unread: the pods could not be read (the status's notes say why), and
	// the counts above are not theirs.
	Unread bool `json:"unread,omitempty"`
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
	s, podList, wl, err := c.readJob(ctx, obj)
	if err != nil {
		return s, err
	}
	warnings, refused, err := c.warnings(ctx, obj, wl, podList)
	if err := c.note(&s.Notes, "its events", err); err != nil {
		return s, err
	}
	if s.holder != nil && s.holder != c {
		// The worker's events: of the job's copy, its Workload and pods.
		there, refusedThere, err := s.holder.warnings(ctx, obj, wl, podList)
		if err := s.holder.note(&s.Notes, "its events on worker cluster "+s.Worker.Name, err); err != nil {
			s.Worker.Unread = err.Error()
		}
		warnings = recent(append(warnings, there...))
		refused = append(refused, refusedThere...)
	}
	s.Warnings = warnings
	attempts := refuse(obj, refused, &s)
	if s.holder != nil {
		s.Setup = s.holder.setupOf(ctx, obj, podList)
		if s.State == Running {
			s.Output = s.holder.lastOutput(ctx, obj, podList)
		}
	}
	c.story(obj, podList, attempts, &s)
	return s, nil
}

// story adds to the status what was kept of the job's failed attempts,
// once the failures its pods show now, and the refusals of its pods that
// its events say (refused, by attempt), are kept too; and which failed
// attempts nothing was kept of.
func (c *Client) story(obj *unstructured.Unstructured, podList []corev1.Pod, refused map[int][]failure.Failure, s *Status) {
	if c.Keeper == nil {
		return
	}
	now := attempt(obj)
	var seen []failure.Failure
	for i := range podList {
		seen = append(seen, failure.FromPod(&podList[i], memberOf(obj, &podList[i]))...)
	}
	if f, ok := preemption(*s); ok {
		seen = append(seen, f)
	}
	byAttempt := map[int][]failure.Failure{now: seen}
	for n, fs := range refused {
		byAttempt[n] = append(byAttempt[n], fs...)
	}
	for n, fs := range byAttempt {
		if len(fs) == 0 {
			continue
		}
		if kept := c.keep(obj, n, fs...); kept.NotKept != nil {
			s.Notes = append(s.Notes, "keeping why it failed: "+kept.NotKept.Error())
			return
		}
	}
	story, err := c.Keeper.Story(storyOf(c, obj))
	if err != nil {
		s.Notes = append(s.Notes, "what was kept of why it failed: "+err.Error())
		return
	}
	s.Attempts = story.Attempts
	failed := int(s.Retries)
	if s.State == Failed {
		failed++
	}
	for n := 1; n <= failed; n++ {
		if _, ok := story.Attempt(n); !ok {
			s.Unseen = append(s.Unseen, n)
		}
	}
}

// get reads a job (the one Find found, the first time): NotFound when it
// is not there, NotServed when its kind is not.
func (c *Client) get(ctx context.Context, ref Ref) (*unstructured.Unstructured, error) {
	if obj := c.take(ref); obj != nil {
		return obj, nil
	}
	resource := ref.resource()
	obj, err := c.Dynamic.Resource(resource).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && !c.Serves(ctx, resource):
		return nil, NotServed{Kind: ref.Kind, Resource: resource}
	case apierrors.IsNotFound(err):
		return nil, NotFound{Ref: ref}
	case err != nil && c.Unreached(err) != nil:
		return nil, c.Unreached(err)
	case err != nil:
		return nil, fmt.Errorf("reading the %s: %w", ref, err)
	}
	return obj, nil
}

// readJob reads the picture of a job read from the cluster, from its pods
// and Workload, read now.
func (c *Client) readJob(ctx context.Context, obj *unstructured.Unstructured) (Status, []corev1.Pod, *workload, error) {
	wl, err := c.workloadOf(ctx, obj)
	return c.read(ctx, obj, wl, err, nil)
}

// read reads the picture of a job read from the cluster, from its pods and
// its Workload (read with it: wlErr says why it was not), and its place in
// the queue. The pods are read where they are (holder): for a job a
// MultiKueue manager dispatched, on its worker cluster, with the state of
// the job's copy there; from what a follower's n mirrors of them, else
// listed.
func (c *Client) read(ctx context.Context, obj *unstructured.Unstructured, wl *workload, wlErr error, n *noticing) (Status, []corev1.Pod, *workload, error) {
	var notes []string
	if err := c.note(&notes, "its Kueue Workload", wlErr); err != nil {
		return Status{}, nil, nil, err
	}
	on, worker, err := c.holder(ctx, wl)
	var podList []corev1.Pod
	podsRead := false
	if err == nil {
		podList, err = n.podsOf(ctx, on, obj)
		podsRead = err == nil
		if err := on.note(&notes, "its pods", err); err != nil {
			worker.Unread = err.Error()
		}
	}
	s, err := picture(obj, podList, wl)
	s.Pods.Unread = !podsRead
	s.Notes = append(s.Notes, notes...)
	s.holder, s.Worker = on, worker
	if err != nil {
		return s, nil, nil, err
	}
	if worker != nil && worker.Unread == "" {
		n.copyOn(ctx, on, worker, obj, podList)
	}
	if s.State == Queued {
		s.Offered = c.offered(ctx, wl)
	}
	c.place(ctx, &s)
	c.namePreemptor(ctx, &s)
	return s, podList, wl, nil
}

// place gives a queued job its position in its LocalQueue, where Kueue's
// visibility API answers.
func (c *Client) place(ctx context.Context, s *Status) {
	if s.State == Queued && s.Workload != "" && s.Queue != "" {
		pending, _ := c.pending(ctx, s.Namespace, s.Queue, s.Workload)
		for _, p := range pending {
			if p.Name == s.Workload {
				s.Position = p.PositionInLocalQueue + 1
			}
		}
	}
}

// picture is the status of a job from what was read of it: the job, its
// pods and its Kueue Workload (nil for none).
func picture(obj *unstructured.Unstructured, podList []corev1.Pod, wl *workload) (Status, error) {
	k := kindOf(obj)
	s := Status{Kind: obj.GetKind(), Name: obj.GetName(), Namespace: obj.GetNamespace(), Queue: obj.GetLabels()[QueueLabel],
		Created: obj.GetCreationTimestamp().Time, Generator: obj.GetAnnotations()[Marker], Workspace: WorkspaceOf(obj)}
	if job, err := JobOf(obj); err == nil {
		s.Pods.Expected = job.Pods()
		name, gpus := accelerator.In(job.Requests())
		s.GPUs, s.GPUResource = gpus.Value(), string(name)
	}
	if err := k.state(&s, obj); err != nil {
		return s, fmt.Errorf("reading the status of %s %q: %w", s.Kind, s.Name, err)
	}
	s.fromPods(obj, podList)
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
	case c.Unreached(err) != nil:
		return c.Unreached(err)
	case apierrors.IsForbidden(err):
		*notes = append(*notes, what+": you may not read them (RBAC)")
	default:
		*notes = append(*notes, fmt.Sprintf("%s: %v", what, err))
	}
	return nil
}

// PodSource lists and watches pods: the API server's core/v1 (restPods),
// or a fake in tests. A watch's events hold *corev1.Pod (a fake's may hold
// them unstructured).
type PodSource interface {
	Pods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}

// restPods lists pods with a REST client of core/v1, in protobuf, and
// watches them with one without a timeout (see Client.Watches).
type restPods struct{ client, watches restclient.Interface }

func (r restPods) Pods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	list := &corev1.PodList{}
	err := r.client.Get().Namespace(namespace).Resource("pods").VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(list)
	return list, err
}

func (r restPods) Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.watches.Get().Namespace(namespace).Resource("pods").VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
}

// podsOf lists a job's pods: by the label its controller gives them, or (T9k)
// by their owner.
func (c *Client) podsOf(ctx context.Context, obj *unstructured.Unstructured) ([]corev1.Pod, error) {
	k := kindOf(obj)
	all, err := c.listPods(ctx, obj.GetNamespace(), metav1.ListOptions{LabelSelector: k.selector(obj.GetName())})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, pod := range all.Items {
		if k.owns(obj, &pod) {
			out = append(out, pod)
		}
	}
	return out, nil
}

// listPods lists the pods of a namespace ("": of all) that opts select,
// sorted by name, each compact.
func (c *Client) listPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	list, err := c.PodSource.Pods(ctx, namespace, opts)
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		compact(&list.Items[i])
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list, nil
}

// compact keeps of a pod what the commands read of it: its metadata but
// its managed fields, its node, the names of its containers and the
// command of each (the launch script, whose setup commands' errors are
// read), and its status. A follower holds the pods of its job for as long
// as it follows it (a thousand, in a mirror), and most of a pod is its
// spec: its containers' environment, mounts and resources, its volumes,
// affinity and tolerations, which no command reads.
func compact(pod *corev1.Pod) {
	spec := corev1.PodSpec{NodeName: pod.Spec.NodeName}
	for _, c := range pod.Spec.InitContainers {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: c.Name})
	}
	for _, c := range pod.Spec.Containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: c.Name, Command: c.Command, Args: c.Args})
	}
	pod.Spec, pod.ManagedFields = spec, nil
}

// jobUIDLabel is the label Kueue (since v0.5) puts on the Workload of a
// job, valued with the job's uid.
const jobUIDLabel = "kueue.x-k8s.io/job-uid"

// workloadOf finds the Kueue Workload of a job: the one it owns, among
// those Kueue labelled with its uid, so that the answer does not grow with
// the jobs of the namespace. None when Kueue has made none (yet), or is
// not installed.
func (c *Client) workloadOf(ctx context.Context, obj *unstructured.Unstructured) (*workload, error) {
	owned, err := c.workloads(ctx, obj.GetNamespace(), jobUIDLabel+"="+string(obj.GetUID()))
	return owned[obj.GetUID()], err
}

// workloads lists the Workloads of a namespace ("": of all) that a label
// selector selects ("": all), each kept as it is read, by the uid of the
// job that owns it.
func (c *Client) workloads(ctx context.Context, namespace, selector string) (map[types.UID]*workload, error) {
	owned := map[types.UID]*workload{}
	err := c.listKueue(ctx, "workloads", namespace, metav1.ListOptions{LabelSelector: selector}, func(dec *json.Decoder) error {
		// Its few fields alone, as its JSON streams in.
		var wl workload
		if err := dec.Decode(&wl); err != nil {
			return fmt.Errorf("reading a Workload: %w", err)
		}
		for _, ref := range wl.OwnerReferences {
			owned[ref.UID] = &wl
		}
		return nil
	})
	return owned, err
}

// pendingPage is how many Workloads one question to Kueue's visibility
// API asks for: the API's own default.
const pendingPage = 1000

// pendingWorkload is a Workload pending in a LocalQueue, as Kueue's
// visibility API says it: its name and owners, and its place in the queue
// from 0, the next to be admitted.
type pendingWorkload struct {
	workloadMeta         `json:"metadata"`
	PositionInLocalQueue int64 `json:"positionInLocalQueue"`
}

// pending asks Kueue's visibility API for the Workloads pending in a
// LocalQueue: page after page, until one is not full, or holds the
// Workload named last ("": read them all). The error says why it did not
// answer (the API is off, or not allowed). The queue may move between two
// pages: a Workload can then be told twice, or not at all.
func (c *Client) pending(ctx context.Context, namespace, queue, last string) ([]pendingWorkload, error) {
	var all []pendingWorkload
	for {
		page, found := 0, false
		err := c.ObjectSource.EachPending(ctx, visibleQueues, namespace, queue, int64(len(all)), pendingPage, func(dec *json.Decoder) error {
			var p pendingWorkload
			if err := dec.Decode(&p); err != nil {
				return fmt.Errorf("reading a pending Workload: %w", err)
			}
			all = append(all, p)
			page++
			found = found || p.Name == last
			return nil
		})
		if err != nil || page < pendingPage || found {
			return all, err
		}
	}
}
