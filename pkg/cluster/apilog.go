package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// APILogVariable names the file where every request a command makes to
// a cluster is written, one JSON object a line, when it is set: what a
// command costs the API server, for platform teams and the benchmarks.
const APILogVariable = "TORCHWRAP_API_LOG"

// APIRequest is one request to an API server, as the API log writes it
// once its answer has been read (or dropped), or as the process ends.
type APIRequest struct {
	Method string `json:"method"`
	// Host is the API server's address; URL the path and query asked.
	Host string `json:"host"`
	URL  string `json:"url"`
	// Status is the HTTP status of the answer, 0 when none came.
	Status int `json:"status"`
	// Sent and Read are the bytes of the request's and the answer's
	// bodies, as they went over the wire (compressed when they were).
	Sent int64 `json:"sent"`
	Read int64 `json:"read"`
	// Started is when it was sent; Seconds how long until its answer's
	// body was read or closed.
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Error   string    `json:"error,omitempty"`
}

// apiLog is the file of the API log, opened once for every client of a
// process (a MultiKueue manager's and its workers'), when it makes one;
// opened says it was.
var apiLog = sync.OnceValues(func() (*apiLogFile, error) {
	opened.Store(true)
	path := os.Getenv(APILogVariable)
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", APILogVariable, path, err)
	}
	return newAPILog(f), nil
})

var opened atomic.Bool

// EndAPILog writes to the API log, if there is one, the requests whose
// answers are still being read as the process ends (a follower's watches
// and followed logs), as far as they were read.
func EndAPILog() {
	if !opened.Load() {
		return
	}
	if l, _ := apiLog(); l != nil {
		l.end()
	}
}

// apiLogFile writes the lines of the API log, one at a time; open are the
// answers being read.
type apiLogFile struct {
	mu   sync.Mutex
	w    io.Writer
	open map[*countedBody]bool
}

func newAPILog(w io.Writer) *apiLogFile {
	return &apiLogFile{w: w, open: map[*countedBody]bool{}}
}

// end writes the requests whose answers are being read, as far as they
// were read.
func (l *apiLogFile) end() {
	l.mu.Lock()
	open := slices.Collect(maps.Keys(l.open))
	l.mu.Unlock()
	for _, b := range open {
		b.done()
	}
}

// write writes a request, whose answer (body) was read to its end or
// closed, if any.
func (l *apiLogFile) write(r APIRequest, body *countedBody) {
	line, _ := json.Marshal(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.open, body)
	l.w.Write(append(line, '\n'))
}

// wrap counts the requests of a transport into the log.
func (l *apiLogFile) wrap(rt http.RoundTripper) http.RoundTripper {
	return counting{log: l, next: rt}
}

// counting is a transport that writes each request to the API log.
type counting struct {
	log  *apiLogFile
	next http.RoundTripper
}

// WrappedRoundTripper is the transport it counts for: client-go finds
// there what cancels a request.
func (c counting) WrappedRoundTripper() http.RoundTripper { return c.next }

func (c counting) RoundTrip(req *http.Request) (*http.Response, error) {
	r := APIRequest{Method: req.Method, Host: req.URL.Host, URL: req.URL.RequestURI(), Sent: max(req.ContentLength, 0), Started: time.Now()}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		r.Error = err.Error()
		r.Seconds = time.Since(r.Started).Seconds()
		c.log.write(r, nil)
		return resp, err
	}
	r.Status = resp.StatusCode
	body := &countedBody{ReadCloser: resp.Body, log: c.log, r: r}
	c.log.mu.Lock()
	c.log.open[body] = true
	c.log.mu.Unlock()
	resp.Body = body
	return resp, nil
}

// countedBody counts the bytes of an answer, and writes its request to
// the log when it is closed or read to its end, once.
type countedBody struct {
	io.ReadCloser
	log  *apiLogFile
	once sync.Once
	mu   sync.Mutex
	r    APIRequest
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.r.Read += int64(n)
	if err != nil && err != io.EOF {
		b.r.Error = err.Error()
	}
	b.mu.Unlock()
	if err != nil {
		b.done()
	}
	return n, err
}

func (b *countedBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

func (b *countedBody) done() {
	b.once.Do(func() {
		b.mu.Lock()
		r := b.r
		b.mu.Unlock()
		r.Seconds = time.Since(r.Started).Seconds()
		b.log.write(r, b)
	})
}
