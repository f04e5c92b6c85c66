package podwatch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
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

// Container is a container instance of a pod whose log may be read, as
// its pod's status shows it; Tag is what the lines of its log are handed
// on with (the pod's place in its job).
type Container[T any] struct {
	// Key tells container instances apart: the pod's uid, the container's
	// name, its restarts.
	Key, Pod, Name string
	// Restarts is the instance's restart count; Restarted the key of the
	// instance before it, when it restarted.
	Restarts  int32
	Restarted string
	// Label names the pod on its lines; HasLog says the instance has a
	// log yet; Ended, when it ended, nil while it runs.
	Label  string
	HasLog bool
	Ended  *time.Time
	Tag    T
	// Status is what its pod says of the container instance (its status,
	// written out): a followed log that could not be read is tried again
	// once it says something else (the container started, is ready, has
	// ended).
	Status string
}

// Line is a line of a container's log, without its newline, with its
// pod, the pod's label and tag, and the width of the longest label read so
// far, to align them.
type Line[T any] struct {
	Pod, Label, Text string
	Tag              T
	Width            int
}

// Logs reads the logs of the containers of a job's pods, each container
// instance once: read whole, one after another (In turn), or followed,
// all at once, each taken up again where it stopped when its read ends
// before its container does. Lines and notes are handed on one at a time.
type Logs[T any] struct {
	namespace string
	// follow: the logs are followed; timestamps: the kubelet's time is
	// kept on each line.
	follow, timestamps bool
	line               func(Line[T])
	note               func(string)
	// again is called when a followed log that ended before its container
	// may be read again (see instance.until).
	again func()
	// stop ends the reading of every log.
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu sync.Mutex
	// started are the container instances read, by key.
	started map[string]*instance
	// streams counts the logs read; width is the longest label.
	streams, width int
	err            error
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
	// A followed log whose read ended before its container (or whose
	// read the API server refused: no log to give yet, its node gone) is
	// read again once its pod says something else of the container than
	// when it was read (at), which the pod's watch tells; one whose read
	// ended while its container ran is read again after a while too
	// (until), longer each time it ends again without a line (early). A
	// log whose read the cluster did not answer is read again at once,
	// when the cluster answers again.
	held  bool
	at    string
	until time.Time
	early int
}

// The time before a followed log that came to its end while its
// container ran is read again: from firstAgain, twice as long each time
// it ends again without a line, up to lastAgain.
const (
	firstAgain = time.Second
	lastAgain  = time.Minute
)

// due tells whether a followed log that is not being read may be read
// again, its container's status now that.
func (inst *instance) due(status string) bool {
	return !inst.held || status != inst.at || !inst.until.IsZero() && !time.Now().Before(inst.until)
}

// NewLogs reads the logs of pods of a namespace, following them or not
// (with the kubelet's time on each line, or not), until the context it
// gives ends (or Stop). line and note are called one at a time. Followed,
// again is called when a log that came to its end while its container ran
// may be read again: the follower then reads the pods and calls Read.
func NewLogs[T any](ctx context.Context, namespace string, follow, timestamps bool, line func(Line[T]), note func(string), again func()) (*Logs[T], context.Context) {
	ctx, stop := context.WithCancel(ctx)
	return &Logs[T]{namespace: namespace, follow: follow, timestamps: timestamps, line: line, note: note, again: again, stop: stop, started: map[string]*instance{}}, ctx
}

// Aside runs say between two lines, not during one: what is said besides
// the lines.
func (l *Logs[T]) Aside(say func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	say()
}

// Note says something besides the lines, between two of them.
func (l *Logs[T]) Note(text string) { l.Aside(func() { l.note(text) }) }

// Streams counts the logs read so far.
func (l *Logs[T]) Streams() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.streams
}

// From is where the logs are read: their source (the API server that
// holds the pods), and what a log that cannot be read means there:
// Unreadable gives the error that holds for every log and ends the
// reading (no right to read them, a cluster gone), or nil for one log's
// own (its pod gone), which is noted, or which a follower tries again:
// at once when Unreached says the cluster could not be reached, else once
// the log's pod has changed.
type From struct {
	Source     LogSource
	Unreadable func(error) error
	Unreached  func(error) bool
}

// read is one container instance's log to read: its container, where
// from, how, and what was read of it (followed).
type read[T any] struct {
	c    Container[T]
	from From
	opts LogOptions
	inst *instance
}

// Read starts reading the log of each container given that has one and is
// not read yet (opts: how; their tail and since hold for a log's first
// read only), in the order given: followed, all at once, their lines as
// they come; else one after another, each whole. A container instance
// whose earlier instance was read is noted as restarted.
func (l *Logs[T]) Read(ctx context.Context, from From, opts LogOptions, containers []Container[T]) {
	var reads []read[T]
	var restarted []string
	l.mu.Lock()
	for _, c := range containers {
		l.width = max(l.width, len(c.Label))
		inst, seen := l.started[c.Key]
		if seen && !inst.reading && !inst.closed.IsZero() && c.Ended != nil && !c.Ended.After(inst.closed) {
			inst.ended = true
		}
		o := opts
		o.Container = c.Name
		switch {
		case !c.HasLog || seen && (inst.reading || inst.ended || !inst.due(c.Status)):
			continue
		case seen:
			// Taken up again where the last read stopped.
			o.TailLines, o.SinceSeconds = nil, nil
			if !inst.last.IsZero() {
				o.SinceTime = &inst.last
			}
		default:
			inst = &instance{}
			l.started[c.Key] = inst
			l.streams++
			if c.Restarted != "" && l.started[c.Restarted] != nil {
				restarted = append(restarted, fmt.Sprintf("%s: container %s restarted (%d restarts); its new log follows", c.Label, c.Name, c.Restarts))
			}
		}
		inst.reading, inst.ended, inst.held = true, c.Ended != nil, false
		r := read[T]{c: c, from: from, opts: o}
		if l.follow {
			r.inst = inst
		}
		reads = append(reads, r)
	}
	l.mu.Unlock()
	for _, text := range restarted {
		l.Note(text)
	}
	if l.follow {
		for _, r := range reads {
			l.wg.Go(func() { l.read(ctx, r, l.say) })
		}
		return
	}
	l.wg.Go(func() { l.inTurn(ctx, reads) })
}

// say hands a line on, aligned with the labels of the pods read so far.
func (l *Logs[T]) say(line Line[T]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line.Width = l.width
	l.line(line)
}

// read reads one container's log, line by line, and hands each line to
// line. Followed, it reads the kubelet's times, to know where it stopped;
// when it ends (the container's end, the cluster's going, an error), the
// next Read takes the log up again, unless its container had ended when
// it began.
func (l *Logs[T]) read(ctx context.Context, r read[T], line func(Line[T])) {
	if r.inst != nil {
		r.opts.Timestamps = true
		defer func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			r.inst.reading = false
		}()
	}
	rc, err := r.from.Source.Log(ctx, l.namespace, r.c.Pod, r.opts)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		switch all := r.from.Unreadable(err); {
		case all != nil:
			l.fail(all)
		case r.inst != nil:
			// The cluster may be gone for a while: the next Read tries
			// again. Or the API server answered that the container has
			// no log to give yet (it has not started, its node does not
			// answer), or that its pod is gone (a retry deletes them):
			// it is tried again once the pod has changed, if it is still
			// there.
			l.mu.Lock()
			r.inst.ended = false
			if !r.from.Unreached(err) {
				r.inst.held, r.inst.at, r.inst.until = true, r.c.Status, time.Time{}
			}
			l.mu.Unlock()
		default:
			// The pod may be gone: say so, and go on with the others.
			l.Note(fmt.Sprintf("%s: its log cannot be read: %s", r.c.Label, err))
		}
		return
	}
	defer rc.Close()
	reader := bufio.NewReader(rc)
	// replayed counts the lines of this read of the last line's time;
	// fresh whether one was handed on.
	replayed, fresh := 0, false
	for {
		text, err := reader.ReadString('\n')
		if r.inst != nil && err != nil {
			// A line cut short comes whole when the log is taken up again.
			l.mu.Lock()
			defer l.mu.Unlock()
			r.inst.ended = r.inst.ended && err == io.EOF
			if !r.inst.ended && ctx.Err() == nil {
				l.readAgain(r.inst, r.c.Status, err == io.EOF, fresh)
			}
			return
		}
		if text = strings.TrimSuffix(text, "\n"); text != "" && (r.inst == nil || l.fresh(r.inst, &text, &replayed)) {
			fresh = true
			line(Line[T]{Pod: r.c.Pod, Label: r.c.Label, Tag: r.c.Tag, Text: text})
		}
		if err != nil {
			return
		}
	}
}

// readAgain holds a followed log whose read ended before its container
// did (l.mu held), its container's status that, until its pod says
// something else of it or a while has passed: its container may have
// ended, which its pod will say, or the kubelet or the API server ended
// the read (a restart, a connection lost). A log whose reads end again and again without a line (fresh)
// waits longer each time. One that came to its end (atEnd) is not read
// again if its container turns out to have ended by then (closed).
func (l *Logs[T]) readAgain(inst *instance, status string, atEnd, fresh bool) {
	now := time.Now()
	if atEnd {
		inst.closed = now
	}
	if fresh {
		inst.early = 0
	}
	wait := min(firstAgain<<inst.early, lastAgain)
	inst.early = min(inst.early+1, 8)
	inst.held, inst.at, inst.until = true, status, now.Add(wait)
	if l.again != nil {
		time.AfterFunc(wait, l.again)
	}
}

// fresh reads the kubelet's time off a followed line, and tells whether
// the line was not handed on before: a log taken up again starts at the
// second of the last line handed on, so the lines before it are left out,
// and of the lines of its time as many as were handed on (replayed counts
// them in this read). The time stays on the line if it was asked for.
func (l *Logs[T]) fresh(inst *instance, text *string, replayed *int) bool {
	stamp, rest, _ := strings.Cut(*text, " ")
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return true // not a time: said as it is
	}
	l.mu.Lock()
	defer l.mu.Unlock()
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
	if !l.timestamps {
		*text = rest
	}
	return true
}

// The logs read in turn: at most LogsAtOnce at once, the one whose turn it
// is and those after it, each of which keeps at most linesAhead lines
// until its turn comes; so the memory does not grow with the pods, nor
// with their logs.
const (
	LogsAtOnce = 8
	linesAhead = 1024
)

// inTurn reads the logs one after another, as kubectl logs does without
// -f, each whole in its turn, while the next ones are read ahead.
func (l *Logs[T]) inTurn(ctx context.Context, reads []read[T]) {
	ahead := make([]chan Line[T], len(reads))
	next := 0
	open := func() {
		lines := make(chan Line[T], linesAhead)
		ahead[next] = lines
		r := reads[next]
		next++
		go func() {
			defer close(lines)
			l.read(ctx, r, func(line Line[T]) {
				select {
				case lines <- line:
				case <-ctx.Done():
				}
			})
		}()
	}
	for next < min(LogsAtOnce, len(reads)) {
		open()
	}
	// Once a log cannot be read for a reason that holds for all (RBAC, a
	// cluster gone), no other is started.
	for i := 0; i < next; i++ {
		for line := range ahead[i] {
			l.say(line)
		}
		ahead[i] = nil
		if next < len(reads) && l.Err() == nil {
			open()
		}
	}
}

// Wait waits for the logs being read to end. Following, a job that has
// finished may keep a container running (a sidecar, a pod its controller
// did not stop): its log is left after grace.
func (l *Logs[T]) Wait(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	if !l.follow {
		<-done
		return
	}
	select {
	case <-done:
	case <-time.After(grace):
		l.stop()
		<-done
	}
}

// Stop ends the reading of every log, and waits for it.
func (l *Logs[T]) Stop() {
	l.stop()
	l.wg.Wait()
}

func (l *Logs[T]) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// Err is the error that ended the reading of every log: the first that
// holds for all.
func (l *Logs[T]) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
