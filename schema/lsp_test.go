package schema_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/textproto"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lspClient is the editor's side of the Language Server Protocol, as little of
// it as checking files needs: it starts a language server, speaks JSON-RPC to
// it over its standard input and output (each message after a Content-Length
// header), answers the server's requests for settings, and keeps the
// diagnostics the server publishes.
type lspClient struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  bytes.Buffer
	writing sync.Mutex

	// settings answers workspace/configuration, by section; configured is
	// closed once the first answer is sent.
	settings   map[string]any
	configured chan struct{}
	once       sync.Once

	mu          sync.Mutex
	nextID      int
	pending     map[int]chan rpcMessage
	diagnostics map[string][]lspDiagnostic // by document URI, the last published
	published   chan struct{}              // signalled after a publication
	done        chan struct{}              // closed when the server's output ends
}

// rpcMessage is any JSON-RPC message: a request (ID and Method), a
// notification (Method only) or a response (ID, and Result or Error).
type rpcMessage struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *int             `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  any              `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *json.RawMessage `json:"error,omitempty"`
}

// lspDiagnostic is a diagnostic as the server publishes it; lines count from 0.
type lspDiagnostic struct {
	Range struct {
		Start struct{ Line, Character int } `json:"start"`
	} `json:"range"`
	Message string `json:"message"`
	Source  string `json:"source"`
}

// startLSP starts the server, initializes it, with root as its workspace, and
// gives it the settings. The server is shut down when the test ends.
func startLSP(t *testing.T, root string, settings map[string]any, command string, args ...string) *lspClient {
	c := &lspClient{
		t:           t,
		cmd:         exec.Command(command, args...),
		settings:    settings,
		configured:  make(chan struct{}),
		pending:     map[int]chan rpcMessage{},
		diagnostics: map[string][]lspDiagnostic{},
		published:   make(chan struct{}, 1),
		done:        make(chan struct{}),
	}
	var err error
	c.stdin, err = c.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	c.cmd.Stderr = &c.stderr
	require.NoError(t, c.cmd.Start())
	go c.read(stdout)
	t.Cleanup(c.stop)

	c.call("initialize", map[string]any{
		"processId": nil,
		"rootUri":   fileURI(root),
		"capabilities": map[string]any{
			"workspace":    map[string]any{"configuration": true},
			"textDocument": map[string]any{"publishDiagnostics": map[string]any{}},
		},
	})
	c.notify("initialized", map[string]any{})
	// The server asks for its settings when told they changed; documents
	// opened before it has them would be checked without them.
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": nil})
	select {
	case <-c.configured:
	case <-c.done:
		t.Fatal("the language server stopped before asking for its settings")
	case <-time.After(time.Minute):
		t.Fatalf("the language server did not ask for its settings within a minute")
	}
	return c
}

// call sends a request and waits for its result.
func (c *lspClient) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	reply := make(chan rpcMessage, 1)
	c.pending[id] = reply
	c.mu.Unlock()
	c.send(rpcMessage{ID: &id, Method: method, Params: params})
	select {
	case m := <-reply:
		require.Nil(c.t, m.Error, "%s: %s", method, errorText(m.Error))
		return m.Result
	case <-c.done:
		c.t.Fatalf("the language server stopped before answering %s", method)
	case <-time.After(time.Minute):
		c.t.Fatalf("the language server did not answer %s within a minute", method)
	}
	return nil
}

// notify sends a notification.
func (c *lspClient) notify(method string, params any) {
	c.send(rpcMessage{Method: method, Params: params})
}

func (c *lspClient) send(m rpcMessage) {
	require.NoError(c.t, c.write(m), "writing to the language server")
}

// write sends one message, after its header.
func (c *lspClient) write(m rpcMessage) error {
	m.JSONRPC = "2.0"
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.writing.Lock()
	defer c.writing.Unlock()
	_, err = fmt.Fprintf(c.stdin, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return err
}

// read takes the server's messages until its output ends.
func (c *lspClient) read(stdout io.Reader) {
	defer close(c.done)
	r := textproto.NewReader(bufio.NewReader(stdout))
	for {
		header, err := r.ReadMIMEHeader()
		if err != nil {
			return
		}
		n, err := strconv.Atoi(header.Get("Content-Length"))
		if err != nil {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r.R, body); err != nil {
			return
		}
		var m struct {
			rpcMessage
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &m) != nil {
			return
		}
		switch {
		case m.ID != nil && m.Method != "":
			c.answer(*m.ID, m.Method, m.Params)
		case m.ID != nil:
			c.mu.Lock()
			reply := c.pending[*m.ID]
			delete(c.pending, *m.ID)
			c.mu.Unlock()
			if reply != nil {
				reply <- m.rpcMessage
			}
		case m.Method == "textDocument/publishDiagnostics":
			var p struct {
				URI         string          `json:"uri"`
				Diagnostics []lspDiagnostic `json:"diagnostics"`
			}
			if json.Unmarshal(m.Params, &p) != nil {
				return
			}
			c.mu.Lock()
			c.diagnostics[p.URI] = p.Diagnostics
			c.mu.Unlock()
			select {
			case c.published <- struct{}{}:
			default: // signalled already
			}
		}
	}
}

// waitForDiagnostics waits until the server has published the diagnostics of
// every file, and returns them by URI.
func (c *lspClient) waitForDiagnostics(t *testing.T, files []string) map[string][]lspDiagnostic {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		c.mu.Lock()
		diagnostics := maps.Clone(c.diagnostics)
		c.mu.Unlock()
		waiting := 0
		for _, f := range files {
			if _, ok := diagnostics[fileURI(f)]; !ok {
				waiting++
			}
		}
		if waiting == 0 {
			return diagnostics
		}
		select {
		case <-c.published:
		case <-c.done:
			t.Fatal("the language server stopped")
		case <-timeout:
			t.Fatalf("the language server published no diagnostics within 2 minutes for %d files", waiting)
		}
	}
}

// answer replies to a request of the server: workspace/configuration with the
// settings of each section asked for (null for the others), anything else
// (client/registerCapability, ...) with null, as an editor that accepts it.
func (c *lspClient) answer(id int, method string, params json.RawMessage) {
	var result any
	if method == "workspace/configuration" {
		var p struct {
			Items []struct{ Section string } `json:"items"`
		}
		if json.Unmarshal(params, &p) == nil {
			sections := make([]any, len(p.Items))
			for i, item := range p.Items {
				sections[i] = c.settings[item.Section]
			}
			result = sections
		}
		defer c.once.Do(func() { close(c.configured) })
	}
	body, _ := json.Marshal(result)
	c.write(rpcMessage{ID: &id, Result: body})
}

// stop asks the server to shut down and exit, and kills it if it does not;
// when the test failed, it logs what the server wrote to standard error.
func (c *lspClient) stop() {
	exited := make(chan error, 1)
	go func() {
		c.mu.Lock()
		c.nextID++
		id := c.nextID
		c.mu.Unlock()
		c.write(rpcMessage{ID: &id, Method: "shutdown"})
		c.write(rpcMessage{Method: "exit"})
		c.stdin.Close()
		exited <- c.cmd.Wait()
	}()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-exited
	}
	if c.t.Failed() && c.stderr.Len() > 0 {
		c.t.Logf("the language server's standard error:\n%s", c.stderr.String())
	}
}

func errorText(e *json.RawMessage) string {
	if e == nil {
		return ""
	}
	return string(*e)
}
