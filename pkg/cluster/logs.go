package cluster

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	restclient "k8s.io/client-go/rest"
)

// LogOptions are what a container's log is read with: the query
// parameters of a pod's log (pods/log).
type LogOptions struct {
	Container  string
	Follow     bool
	Previous   bool
	Timestamps bool
	// TailLines keeps the last lines only; nil for all.
	TailLines *int64
	// SinceSeconds keeps the lines of the last seconds only, SinceTime
	// those from that second on; nil for all.
	SinceSeconds *int64
	SinceTime    *time.Time
	// LimitBytes keeps the first bytes only; nil for all.
	LimitBytes *int64
}

// LogSource reads a container's log: the API server's pods/log, or a fake
// in tests.
type LogSource interface {
	Log(ctx context.Context, namespace, pod string, opts LogOptions) (io.ReadCloser, error)
}

// restLogs reads pods/log with REST clients of core/v1: a log is plain
// text, which the dynamic client cannot read. A followed log goes through
// following (followingClient), the others through client.
type restLogs struct{ client, following restclient.Interface }

func (r restLogs) Log(ctx context.Context, namespace, pod string, o LogOptions) (io.ReadCloser, error) {
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
// note what else happens: why no pod has a log yet, pods that replace
// others (a retry), containers that restart. Without Follow it reads the
// logs there are and gives the job's status; with Follow it follows them
// until the job has finished, and gives its last status. The error is
// NotFound when the job is not there (or was deleted while followed), ctx's
// when it ended first. Following, it notices each failure of the job's pods
// as it happens, as Follow does; line, note and notice are called one at a
// time.
func (c *Client) Logs(ctx context.Context, req LogRequest, line func(LogLine), note func(string), notice func(Noticed)) (Status, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := &follower{req: req, line: line, stop: cancel, started: map[string]*instance{}, member: map[string]types.UID{}}
	f.note = func(text string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		note(text)
	}
	defer func() {
		cancel()
		f.wg.Wait()
	}()
	var n *noticing
	if req.Follow {
		n = c.noticing(req.Ref, func(x Noticed) {
			f.mu.Lock()
			defer f.mu.Unlock()
			notice(x)
		})
	}
	var last Status
	for round := 0; ; round++ {
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
			if !req.Follow || s.State.Finished() {
				f.drain(req.Follow, finishReadings*c.every())
				switch {
				case f.streams > 0 || req.Follow:
				case s.Worker != nil && s.State.Finished():
					f.note(fmt.Sprintf("no logs: the pods ran on worker cluster %s, where MultiKueue deletes them once the job has finished: %s", s.Worker.Name, s.Line()))
				case s.State.Finished():
					f.note("no logs: its pods are gone: " + s.Line())
				default:
					f.note("no logs yet: " + s.Line())
				}
				return last, f.failure()
			}
			if said := "waiting for logs: " + s.Line(); f.streams == 0 && said != f.said {
				f.said = said
				f.note(said)
			}
		}
		if err := f.failure(); err != nil {
			return last, err
		}
		if err := n.wait(ctx, n.every()); err != nil {
			return last, err
		}
	}
}

// logRound reads the job, its pods (which the user must be allowed to
// list; from what a follower's n mirrors of them, else listed), where they
// are (holder), and its status, whose holder reads their logs.
func (c *Client) logRound(ctx context.Context, ref Ref, n *noticing) (Status, *unstructured.Unstructured, []corev1.Pod, error) {
	obj, err := c.get(ctx, ref)
	if err != nil {
		return Status{}, nil, nil, err
	}
	// What Kueue says is for the message of a job without pods, and says
	// where they are: a Workload not read leaves it out.
	wl, err := c.workloadOf(ctx, obj)
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
	c.place(ctx, &s)
	return s, obj, podList, nil
}

// follower reads the logs of a job's pods, each container instance once.
type follower struct {
	req  LogRequest
	line func(LogLine)
	// note says what happens besides the lines, one note at a time with
	// the lines and the failures noticed.
	note func(string)
	// stop ends the reading of every log.
	stop context.CancelFunc
	wg   sync.WaitGroup

	// started are the container instances read, by pod uid/container/
	// restarts.
	started map[string]*instance
	// member is the pod each label was last seen on.
	member map[string]types.UID
	// streams counts the logs read; said is the last line that said why
	// there are none yet.
	streams int
	said    string
	retries int64

	mu    sync.Mutex
	width int
	err   error
}

// instance is what was read of a container instance's log. A followed log
// is read with the kubelet's time of each line, so that a read that ended
// before the container did (the cluster went away, a connection died) is
// taken up again where it stopped, without a line lost or said twice; the
// times are left out of the lines unless asked for.
type instance struct {
	// reading: a read of it is under way; ended: its container had ended
	// when the last read began, which read it to its end.
	reading, ended bool
	// last is the time of the last line read, atLast how many lines of
	// that time were read.
	last   time.Time
	atLast int
	// closed is when the last read came to the log's end while its
	// container ran: the kubelet ends a followed log when its container
	// ends, and a container that ended by then needs no read again.
	closed time.Time
}

// start starts reading every selected container instance that has a log
// and is not read yet, from the cluster on.
func (f *follower) start(ctx context.Context, on *Client, obj *unstructured.Unstructured, podList []corev1.Pod, round int, s Status) error {
	opts := LogOptions{Container: f.req.Container, Follow: f.req.Follow, Previous: f.req.Previous, Timestamps: f.req.Timestamps}
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
	var reads []logRead
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
		f.mu.Lock()
		f.width = max(f.width, len(label))
		f.mu.Unlock()
		container := f.req.Container
		if container == "" {
			container = k.trainingContainer(obj.Object, pod)
		}
		status, ok := containerStatus(pod, container)
		if !ok {
			if !hasContainer(pod, container) {
				return fmt.Errorf("pod %s of the %s has no container %s; its containers: %s", pod.Name, f.req.Ref, container, strings.Join(containerNames(pod), ", "))
			}
			continue // not started
		}
		hasLog := status.State.Running != nil || status.State.Terminated != nil
		if f.req.Previous {
			hasLog = status.LastTerminationState.Terminated != nil
		}
		key := fmt.Sprintf("%s/%s/%d", pod.UID, container, status.RestartCount)
		o := opts
		o.Container = container
		f.mu.Lock()
		inst, seen := f.started[key]
		if seen && !inst.reading && !inst.closed.IsZero() && status.State.Terminated != nil && !status.State.Terminated.FinishedAt.After(inst.closed) {
			inst.ended = true
		}
		switch {
		case !hasLog || seen && (inst.reading || inst.ended):
			f.mu.Unlock()
			continue
		case seen:
			// Taken up again where the last read stopped.
			o.TailLines, o.SinceSeconds = nil, nil
			if !inst.last.IsZero() {
				o.SinceTime = &inst.last
			}
		default:
			inst = &instance{}
			f.started[key] = inst
			f.streams++
		}
		inst.reading, inst.ended = true, status.State.Terminated != nil
		f.mu.Unlock()
		if !seen && round > 0 && status.RestartCount > 0 && f.started[fmt.Sprintf("%s/%s/%d", pod.UID, container, status.RestartCount-1)] != nil {
			f.note(fmt.Sprintf("%s: container %s restarted (%d restarts); its new log follows", label, container, status.RestartCount))
		}
		r := logRead{key: key, pod: pod.Name, label: label, member: m, known: known, opts: o}
		if f.req.Follow {
			r.inst = inst
		}
		reads = append(reads, r)
	}
	// Once every label of the round is known, for the width. Followed, the
	// logs are read all at once, their lines as they come; else one after
	// another, in the order of the pods' ranks, each whole.
	if f.req.Follow {
		for _, r := range reads {
			f.wg.Go(func() { f.read(ctx, on, r, f.say) })
		}
	} else {
		slices.SortStableFunc(reads, func(a, b logRead) int {
			if a.known != b.known {
				return map[bool]int{true: -1, false: 1}[a.known]
			}
			return cmp.Or(cmp.Compare(a.member.Rank, b.member.Rank), strings.Compare(a.label, b.label))
		})
		f.wg.Go(func() { f.inTurn(ctx, on, reads) })
	}
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
		f.note(fmt.Sprintf("new pods %s: %s; their logs follow", strings.Join(replaced, ", "), why))
	}
	return nil
}

// logRead is one container's log to read: its key (pod uid/container/
// restarts), its pod, the pod's label and place, how, and what was read of
// it (followed).
type logRead struct {
	key, pod, label string
	member          Member
	known           bool
	opts            LogOptions
	inst            *instance
}

// say hands a line on, aligned with the labels of the pods read so far.
func (f *follower) say(l LogLine) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l.Width = f.width
	f.line(l)
}

// read reads one container's log, line by line, from the cluster on, and
// hands each line to line. Followed, it reads the kubelet's times, to know
// where it stopped; when it ends (the container's end, the cluster's
// going, an error), the next round takes the log up again, unless its
// container had ended when it began.
func (f *follower) read(ctx context.Context, on *Client, r logRead, line func(LogLine)) {
	if r.inst != nil {
		r.opts.Timestamps = true
		defer func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			r.inst.reading = false
		}()
	}
	rc, err := on.LogSource.Log(ctx, f.req.Ref.Namespace, r.pod, r.opts)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return
	case apierrors.IsForbidden(err):
		f.fail(forbidden("get", "pods/log", f.req.Ref.Namespace, "to read the logs of its pods"))
		return
	case r.inst != nil:
		// The cluster may be gone for a while, the container not ready to
		// give its log yet, or its pod gone (a retry deletes them): the
		// next round tries again, if the pod is still there.
		f.mu.Lock()
		r.inst.ended = false
		f.mu.Unlock()
		return
	case on.Unreached(err) != nil:
		f.fail(on.Unreached(err))
		return
	default:
		// The pod may be gone: say so, and go on with the others.
		f.note(fmt.Sprintf("%s: its log cannot be read: %s", r.label, Message(err)))
		return
	}
	defer rc.Close()
	reader := bufio.NewReader(rc)
	// replayed counts the lines of this read of the last line's time.
	replayed := 0
	for {
		text, err := reader.ReadString('\n')
		if r.inst != nil && err != nil {
			// A line cut short comes whole when the log is taken up again.
			f.mu.Lock()
			r.inst.ended = r.inst.ended && err == io.EOF
			if err == io.EOF && !r.inst.ended {
				r.inst.closed = time.Now()
			}
			f.mu.Unlock()
			return
		}
		if text = strings.TrimSuffix(text, "\n"); text != "" && (r.inst == nil || f.fresh(r.inst, &text, &replayed)) {
			line(LogLine{Pod: r.pod, Label: r.label, Member: r.member, Text: text})
		}
		if err != nil {
			return
		}
	}
}

// fresh reads the kubelet's time off a followed line, and tells whether
// the line was not handed on before: a log taken up again starts at the
// second of the last line handed on, so the lines before it are left out,
// and of the lines of its time as many as were handed on (replayed counts
// them in this read). The time stays on the line if it was asked for.
func (f *follower) fresh(inst *instance, text *string, replayed *int) bool {
	stamp, rest, _ := strings.Cut(*text, " ")
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return true // not a time: said as it is
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case at.Before(inst.last):
		return false
	case at.Equal(inst.last):
		if *replayed++; *replayed <= inst.atLast {
			return false
		}
		inst.atLast++
	default:
		inst.last, inst.atLast, *replayed = at, 1, 1
	}
	if !f.req.Timestamps {
		*text = rest
	}
	return true
}

// The logs read in turn: at most logsAtOnce at once, the one whose turn it
// is and those after it, each of which keeps at most linesAhead lines
// until its turn comes; so the memory does not grow with the pods, nor
// with their logs.
const (
	logsAtOnce = 8
	linesAhead = 1024
)

// inTurn reads the logs one after another, as kubectl logs does without
// -f, each whole in its turn, while the next ones are read ahead.
func (f *follower) inTurn(ctx context.Context, on *Client, reads []logRead) {
	ahead := make([]chan LogLine, len(reads))
	next := 0
	open := func() {
		lines := make(chan LogLine, linesAhead)
		ahead[next] = lines
		r := reads[next]
		next++
		go func() {
			defer close(lines)
			f.read(ctx, on, r, func(l LogLine) {
				select {
				case lines <- l:
				case <-ctx.Done():
				}
			})
		}()
	}
	for next < min(logsAtOnce, len(reads)) {
		open()
	}
	// Once a log cannot be read for a reason that holds for all (RBAC, a
	// cluster gone), no other is started.
	for i := 0; i < next; i++ {
		for l := range ahead[i] {
			f.say(l)
		}
		ahead[i] = nil
		if next < len(reads) && f.failure() == nil {
			open()
		}
	}
}

// drain waits for the logs being read to end. Following, a job that has
// finished may keep a container running (a sidecar, a pod its controller
// did not stop): its log is left after grace.
func (f *follower) drain(following bool, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(done)
	}()
	if !following {
		<-done
		return
	}
	select {
	case <-done:
	case <-time.After(grace):
		f.stop()
		<-done
	}
}

func (f *follower) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *follower) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// containerStatus is the status of a pod's container or init container of
// that name; false when it has none yet.
func containerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, c := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.ContainerStatus{}, false
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
