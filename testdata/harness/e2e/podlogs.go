//go:build linux

package e2e

// The logs of the process nodes' containers, kept as a kubelet keeps them
// (each run of a container in a file of its own, each line with the time it
// was written), and served as a kubelet serves them to the API server, which
// passes pods/log requests on to the node's kubelet endpoint:
// GET /containerLogs/<namespace>/<pod>/<container>, with the query
// parameters of PodLogOptions (follow, previous, timestamps, tailLines,
// sinceSeconds, sinceTime, limitBytes).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// logTime is how a log line's time is written: RFC 3339 with nanoseconds,
// of fixed width.
const logTime = "2006-01-02T15:04:05.000000000Z07:00"

// containerLog is the output of one run of a container: standard output and
// standard error, line by line as they come.
type containerLog struct {
	path string
	mu   sync.Mutex
	file *os.File
	// changed is closed (and made anew) at each write and at the end, for
	// the readers that follow the log.
	changed chan struct{}
	ended   bool
}

func newContainerLog(path string) (*containerLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &containerLog{path: path, file: f, changed: make(chan struct{})}, nil
}

// write adds a line, with the time now.
func (l *containerLog) write(line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.file.WriteString(time.Now().UTC().Format(logTime) + " ")
	l.file.Write(line)
	l.file.WriteString("\n")
	close(l.changed)
	l.changed = make(chan struct{})
}

// end closes the log: the run is over.
func (l *containerLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		l.ended = true
		l.file.Close()
		close(l.changed)
	}
}

// state tells whether the run is over, and gives what is closed at the next
// write.
func (l *containerLog) state() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended, l.changed
}

// The kubelet's bounds of a termination message read from a container's
// log (kubecontainer.MaxContainerTerminationMessageLogLines and
// MaxContainerTerminationMessageLogLength, Kubernetes 1.33).
const (
	terminationMessageLines = 80
	terminationMessageBytes = 2048
)

// terminationMessage is what a kubelet puts in the status of a container
// that failed with terminationMessagePolicy FallbackToLogsOnError: the last
// lines of its log, then the last bytes of those.
func (l *containerLog) terminationMessage() string {
	data, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	for _, line := range lines[max(0, len(lines)-terminationMessageLines):] {
		// Each line is written after its time.
		_, text, _ := strings.Cut(line, " ")
		b.WriteString(text)
	}
	message := b.String()
	return message[max(0, len(message)-terminationMessageBytes):]
}

// lineWriter writes what a process prints to a log, line by line; the last
// line may lack its newline (flush).
type lineWriter struct {
	log     *containerLog
	partial []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.partial = append(w.partial, b...)
	for {
		i := strings.IndexByte(string(w.partial), '\n')
		if i < 0 {
			return len(b), nil
		}
		w.log.write(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
}

func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.log.write(w.partial)
		w.partial = nil
	}
}

// logOptions are the query parameters of a logs request.
type logOptions struct {
	follow, previous, timestamps bool
	tail                         int // -1: all
	since                        time.Time
	limit                        int64 // 0: no limit
}

func parseLogOptions(q map[string][]string) (logOptions, error) {
	get := func(name string) string {
		if v := q[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	o := logOptions{follow: get("follow") == "true", previous: get("previous") == "true", timestamps: get("timestamps") == "true", tail: -1}
	if v := get("tailLines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, fmt.Errorf("tailLines %q is not a count", v)
		}
		o.tail = n
	}
	if v := get("sinceSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return o, fmt.Errorf("sinceSeconds %q is not a positive count", v)
		}
		o.since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	if v := get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, fmt.Errorf("sinceTime %q: %v", v, err)
		}
		o.since = t
	}
	if v := get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return o, fmt.Errorf("limitBytes %q is not a positive count", v)
		}
		o.limit = n
	}
	return o, nil
}

// serve writes the log to w as the options say: the lines since a time, the
// last few, with or without their times, and with follow, the lines to come
// until the run is over or ctx ends.
func (l *containerLog) serve(ctx context.Context, w io.Writer, o logOptions) error {
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer f.Close()
	out := &limitedWriter{w: w, limit: o.limit}
	r := bufio.NewReader(f)
	// What is there now, for tailLines; then what comes.
	var lines []string
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		lines = append(lines, line)
	}
	if o.tail >= 0 && len(lines) > o.tail {
		lines = lines[len(lines)-o.tail:]
	}
	for _, line := range lines {
		if !o.write(out, line) {
			return nil
		}
	}
	flush(w)
	for o.follow {
		ended, changed := l.state()
		line, err := r.ReadString('\n')
		switch {
		case err == nil:
			if !o.write(out, line) {
				return nil
			}
			continue
		case err != io.EOF:
			return err
		case ended:
			return nil
		}
		flush(w)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
	return nil
}

// write writes a line of the file as the options say; false once the byte
// limit is reached.
func (o logOptions) write(w *limitedWriter, line string) bool {
	stamp, text, _ := strings.Cut(line, " ")
	if !o.since.IsZero() {
		if t, err := time.Parse(logTime, stamp); err == nil && t.Before(o.since) {
			return true
		}
	}
	if o.timestamps {
		text = line
	}
	return w.write(text)
}

// limitedWriter stops after limit bytes, as the kubelet does for
// limitBytes (0: no limit).
type limitedWriter struct {
	w              io.Writer
	limit, written int64
}

// write writes s, or what the limit leaves of it; false once it is reached.
func (l *limitedWriter) write(s string) bool {
	if l.limit > 0 && l.written+int64(len(s)) >= l.limit {
		io.WriteString(l.w, s[:l.limit-l.written])
		l.written = l.limit
		return false
	}
	l.written += int64(len(s))
	io.WriteString(l.w, s)
	return true
}

func flush(w io.Writer) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
