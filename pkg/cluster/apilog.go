package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// APILogVariable names the file where every request a command makes to
// a cluster is written, one JSON object a line, when it is set: what a
// command costs the API server, for platform teams and the benchmarks.
const APILogVariable = "TORCHWRAP_API_LOG"

// APIRequest is one request to an API server, as the API log writes it
// once its answer has been read (or dropped).
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
// process (a MultiKueue manager's and its workers').
var apiLog = sync.OnceValues(func() (*apiLogFile, error) {
	path := os.Getenv(APILogVariable)
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", APILogVariable, path, err)
	}
	return &apiLogFile{w: f}, nil
})

// apiLogFile writes the lines of the API log, one at a time.
type apiLogFile struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *apiLogFile) write(r APIRequest) {
	line, _ := json.Marshal(r)
	l.mu.Lock()
	defer l.mu.Unlock()
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
		c.log.write(r)
		return resp, err
	}
	r.Status = resp.StatusCode
	resp.Body = &countedBody{ReadCloser: resp.Body, log: c.log, r: r}
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
		b.log.write(r)
	})
}
