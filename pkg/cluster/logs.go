package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	restclient "k8s.io/client-go/rest"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
)

// restLogs reads pods/log with REST clients of core/v1: a log is plain
// text, which the dynamic client cannot read. A followed log goes through
// following (followingClient), the others through client.
type restLogs struct{ client, following restclient.Interface }

func (r restLogs) Log(ctx context.Context, namespace, pod string, o podwatch.LogOptions) (io.ReadCloser, error) {
	client := r.client
	if o.Follow {
		client = r.following
	}
	req := client.Get().Namespace(namespace).Resource("pods").Name(pod).SubResource("log").Param("container", o.Container)
	for param, on := range map[string]bool{"follow": o.Follow, "previous": o.Previous, "timestamps": o.Timestamps} {
		if on {
			req.Param(param, "true")
		}
	}
	if o.TailLines != nil {
		req.Param("tailLines", strconv.FormatInt(*o.TailLines, 10))
	}
	if o.SinceSeconds != nil {
		req.Param("sinceSeconds", strconv.FormatInt(*o.SinceSeconds, 10))
	}
	if o.SinceTime != nil {
		req.Param("sinceTime", o.SinceTime.UTC().Format(time.RFC3339))
	}
	if o.LimitBytes != nil {
		req.Param("limitBytes", strconv.FormatInt(*o.LimitBytes, 10))
	}
	return req.Stream(ctx)
}

// LogRequest says which logs Logs reads, and how.
type LogRequest struct {
	Ref Ref
	// Role selects the pods of a role (worker), or one pod by its role and
	// index (worker-1); "" for every pod.
	Role string
	// Rank selects the pod of that node rank; nil for every pod.
	Rank *int
	// Container is the container read, an init container too; "" for the
	// training container.
	Container string
	// Follow follows the logs until the job finishes: across restarts of
	// its containers, and its new pods (an AppWrapper's retry).
	Follow     bool
	Previous   bool
	Timestamps bool
	// Tail keeps the last lines of each log read at first; nil for all.
	Tail *int64
	// Since keeps the lines of that last while of each log read at first;
	// 0 for all.
	Since time.Duration
}

// selects tells whether the request reads the pod of that member (known is
// false for a pod whose place is not known).
func (r LogRequest) selects(m Member, known bool) bool {
	if r.Role != "" && (!known || r.Role != m.Role && r.Role != m.String()) {
		return false
	}
	return r.Rank == nil || known && m.Rank == *r.Rank
}

// SelectsMember tells whether the request's role selects a pod of that
// member (worker-1), as kept of a failure; "" for a pod whose place is not
// known.
func (r LogRequest) SelectsMember(member string) bool {
	role := member
	if i := strings.LastIndex(member, "-"); i >= 0 {
		role = member[:i]
	}
	return r.Role == "" || member != "" && (r.Role == role || r.Role == member)
}

// asked says which pods the request selects, as its flags do.
func (r LogRequest) asked() string {
	var flags []string
	if r.Role != "" {
		flags = append(flags, "--role "+r.Role)
	}
	if r.Rank != nil {
		flags = append(flags, "--rank "+strconv.Itoa(*r.Rank))
	}
	return strings.Join(flags, " ")
}

// LogLine is a line of a pod's log.
type LogLine struct {
	Pod string
	// Label names the pod in the job: its member (worker-1), else its name.
	Label  string
	Member Member
	// Text is the line, without its newline.
	Text string
	// Width is the longest label of the pods read so far, to align them.
	Width int
}

// Logs reads the logs of a job's pods, each line to line as it arrives
// (lines of several pods interleaved, one call at a time), and says to
// note what else happens: why no pod has a log yet (the API server's
// refusal of them too), pods that replace others (a retry), containers
// that restart. Without Follow it reads the logs there are and gives the
// job's status; with Follow it follows them until the job has finished,
// or the API server refuses its pods for good (Status.Refusal), and gives
// its last status. The error is
// NotFound when the job is not there (or was deleted while followed), ctx's
// when it ended first. Following, it reads the job and its pods again when
// what it watches of them changes, as Follow does, and starts reading each
// container's log when its pod's watch says it has started; it notices each
// failure of the job's pods as it happens; line, note and notice are
// called one at a time.
func (c *Client) Logs(ctx context.Context, req LogRequest, line func(LogLine), note func(string), notice func(Noticed)) (Status, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &follower{req: req, member: map[string]types.UID{}}
	var n *noticing
	var again func()
	if req.Follow {
		n = c.noticing(ctx, req.Ref, func(x Noticed) { f.logs.Aside(func() { notice(x) }) })
		again = n.poke
	}
	f.logs, ctx = podwatch.NewLogs(ctx, req.Ref.Namespace, req.Follow, req.Timestamps, func(l podwatch.Line[Member]) {
		line(LogLine{Pod: l.Pod, Label: l.Label, Member: l.Tag, Text: l.Text, Width: l.Width})
	}, note, again)
	defer f.logs.Stop()
	var last Status
	for round := 0; ; round++ {
		if req.Follow {
			if err := n.next(ctx); err != nil {
				return last, err
			}
		}
		s, obj, podList, err := c.logRound(ctx, req.Ref, n)
		switch {
		case ctx.Err() != nil:
			return last, ctx.Err()
		case round > 0 && errors.As(err, &NotFound{}):
			return last, fmt.Errorf("the %s was deleted while its logs were followed", req.Ref)
		case req.Follow && n.lost(err):
		case err != nil:
			return last, err
		default:
			if n != nil {
				if err := n.read(ctx, &s, obj); err != nil {
					return last, err
				}
			}
			last = s
			if err := f.start(ctx, s.holder, obj, podList, round, s); err != nil {
				return last, err
			}
			if !req.Follow || s.State.Finished() || s.Refusal != nil {
				f.logs.Wait(finishGaps * c.gap())
				switch {
				case f.logs.Streams() > 0 || req.Follow:
				case s.Worker != nil && s.State.Finished():
					f.logs.Note(fmt.Sprintf("no logs: the pods ran on worker cluster %s, where MultiKueue deletes them once the job has finished: %s", s.Worker.Name, s.Line()))
				case s.State.Finished():
					f.logs.Note("no logs: its pods are gone: " + s.Line())
				default:
					f.logs.Note("no logs yet: " + s.Line())
				}
				return last, f.logs.Err()
			}
			if said := "waiting for logs: " + s.Line(); f.logs.Streams() == 0 && said != f.said {
				f.said = said
				f.logs.Note(said)
			}
		}
		if err := f.logs.Err(); err != nil {
			return last, err
		}
	}
}

// logRound reads the job, its pods (which the user must be allowed to
// list), where they are (holder), and its status, whose holder reads their
// logs: from what a follower's n watches of them, else read.
func (c *Client) logRound(ctx context.Context, ref Ref, n *noticing) (Status, *unstructured.Unstructured, []corev1.Pod, error) {
	var obj *unstructured.Unstructured
	var wl *workload
	var err error
	if n == nil {
		if obj, err = c.get(ctx, ref); err == nil {
			wl, err = c.workloadOf(ctx, obj)
		}
	} else {
		obj, wl, err = n.watched(ctx)
	}
	if obj == nil {
		return Status{}, nil, nil, err
	}
	// What Kueue says is for the message of a job without pods, and says
	// where they are: a Workload not read leaves it out.
	if c.Unreached(err) != nil {
		return Status{}, nil, nil, c.Unreached(err)
	}
	on, worker, err := c.holder(ctx, wl)
	if err != nil {
		return Status{}, nil, nil, fmt.Errorf("the %s runs on a MultiKueue worker cluster: %w", ref, err)
	}
	podList, err := n.podsOf(ctx, on, obj)
	switch {
	case err == nil:
	case on.Unreached(err) != nil:
		return Status{}, nil, nil, on.Unreached(err)
	case apierrors.IsForbidden(err):
		return Status{}, nil, nil, forbidden("list", "pods", ref.Namespace, "to find the job's pods")
	default:
		return Status{}, nil, nil, fmt.Errorf("listing the pods of the %s: %w", ref, err)
	}
	s, err := picture(obj, podList, wl)
	if err != nil {
		return s, nil, nil, err
	}
	s.holder, s.Worker = on, worker
	if n == nil && len(podList) == 0 && !s.State.Finished() {
		// Why there are no pods may be that the API server refuses them,
		// which only the events say (a follower's n watches them); without
		// the right to read them, the line says less.
		if refusals, err := c.refusalIndex(ctx, obj.GetNamespace()); err == nil {
			refuse(obj, refusals.of(obj), &s)
		}
	}
	c.place(ctx, &s)
	return s, obj, podList, nil
}

// follower reads the logs of a job's pods, those of the request: which
// pods, which container of each, labelled by their place in the job; its
// logs read them.
type follower struct {
	req  LogRequest
	logs *podwatch.Logs[Member]
	// member is the pod each label was last seen on.
	member map[string]types.UID
	// said is the last line that said why there are no logs yet; retries
	// the job's retries when its pods were last read.
	said    string
	retries int64
}

// start starts reading every selected container instance that has a log
// and is not read yet, from the cluster on: in the order of the pods'
// ranks, unless followed.
func (f *follower) start(ctx context.Context, on *Client, obj *unstructured.Unstructured, podList []corev1.Pod, round int, s Status) error {
	opts := podwatch.LogOptions{Follow: f.req.Follow, Previous: f.req.Previous, Timestamps: f.req.Timestamps}
	if round == 0 {
		opts.TailLines = f.req.Tail
		if f.req.Since > 0 {
			since := int64(f.req.Since.Seconds())
			opts.SinceSeconds = &since
		}
		f.retries = s.Retries
	}
	k := kindNamed(s.Kind)
	var replaced, others []string
	type selected struct {
		c     podwatch.Container[Member]
		known bool
	}
	var containers []selected
	for i := range podList {
		pod := &podList[i]
		m, known := k.member(obj.Object, pod)
		if !f.req.selects(m, known) {
			if known {
				others = append(others, fmt.Sprintf("%s (rank %d)", m, m.Rank))
			} else {
				others = append(others, pod.Name)
			}
			continue
		}
		label := pod.Name
		if known {
			label = m.String()
		}
		if uid, seen := f.member[label]; seen && uid != pod.UID {
			replaced = append(replaced, label)
		}
		f.member[label] = pod.UID
		name := f.req.Container
		if name == "" {
			name = k.trainingContainer(obj.Object, pod)
		}
		c := podwatch.Container[Member]{Pod: pod.Name, Name: name, Label: label, Tag: m}
		status, ok := podwatch.ContainerStatus(pod, name)
		switch {
		case !ok && !hasContainer(pod, name):
			return fmt.Errorf("pod %s of the %s has no container %s; its containers: %s", pod.Name, f.req.Ref, name, strings.Join(containerNames(pod), ", "))
		case ok:
			c.Key = fmt.Sprintf("%s/%s/%d", pod.UID, name, status.RestartCount)
			c.Restarts = status.RestartCount
			if status.RestartCount > 0 {
				c.Restarted = fmt.Sprintf("%s/%s/%d", pod.UID, name, status.RestartCount-1)
			}
			c.HasLog = status.State.Running != nil || status.State.Terminated != nil
			state, _ := json.Marshal(status)
			c.Status = string(state)
			if f.req.Previous {
				c.HasLog = status.LastTerminationState.Terminated != nil
			}
			if t := status.State.Terminated; t != nil {
				c.Ended = &t.FinishedAt.Time
			}
		}
		containers = append(containers, selected{c, known})
	}
	// Followed, the logs are read all at once, their lines as they come;
	// else one after another, in the order of the pods' ranks, each whole.
	if !f.req.Follow {
		slices.SortStableFunc(containers, func(a, b selected) int {
			if a.known != b.known {
				return map[bool]int{true: -1, false: 1}[a.known]
			}
			return cmp.Or(cmp.Compare(a.c.Tag.Rank, b.c.Tag.Rank), strings.Compare(a.c.Label, b.c.Label))
		})
	}
	read := make([]podwatch.Container[Member], len(containers))
	for i, c := range containers {
		read[i] = c.c
	}
	f.logs.Read(ctx, podwatch.From{Source: on.LogSource, Unreadable: f.unreadable(on), Unreached: func(err error) bool { return on.Unreached(err) != nil }}, opts, read)
	if len(others) == len(podList) && len(podList) > 0 {
		return fmt.Errorf("no pod of the %s is the one asked for (%s); its pods: %s", f.req.Ref, f.req.asked(), strings.Join(others, ", "))
	}
	if len(replaced) > 0 {
		sort.Strings(replaced)
		why := "they replace pods of the same names"
		if s.Retries > f.retries {
			why = fmt.Sprintf("the %s was reset after a failure (retry %d)", s.Kind, s.Retries)
		}
		f.retries = s.Retries
		f.logs.Note(fmt.Sprintf("new pods %s: %s; their logs follow", strings.Join(replaced, ", "), why))
	}
	return nil
}

// unreadable says what a log that cannot be read on the cluster on means:
// no right to read the logs ends the reading; so does a cluster that does
// not answer, unless the logs are followed (they are taken up again once
// it answers); any other error is the log's own.
func (f *follower) unreadable(on *Client) func(error) error {
	return func(err error) error {
		switch {
		case apierrors.IsForbidden(err):
			return forbidden("get", "pods/log", f.req.Ref.Namespace, "to read the logs of its pods")
		case !f.req.Follow:
			return on.Unreached(err)
		}
		return nil
	}
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, n := range containerNames(pod) {
		if strings.TrimSuffix(n, " (init)") == name {
			return true
		}
	}
	return false
}

// containerNames are the names of a pod's containers, its init containers
// marked.
func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}
