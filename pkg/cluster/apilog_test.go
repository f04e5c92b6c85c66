package cluster

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each request is one line of the API log once its answer is read (or
// when the process ends): what was asked, the answer's status and bytes,
// and a request that got no answer with its error.
func TestAPILog(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write(bytes.Repeat([]byte("x"), 1000+len(body)))
	}))
	defer server.Close()
	var out bytes.Buffer
	log := newAPILog(&out)
	client := &http.Client{Transport: log.wrap(http.DefaultTransport)}

	resp, err := client.Get(server.URL + "/api/v1/pods?labelSelector=a%3Db")
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp, err = client.Post(server.URL+"/apis", "text/plain", strings.NewReader("12345"))
	require.NoError(t, err)
	resp.Body.Close() // closed unread: what was read is counted
	resp, err = client.Get(server.URL + "/missing")
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = client.Get("http://127.0.0.1:1/nothing")
	require.Error(t, err)
	// A watch still open as the process ends: written then, once.
	resp, err = client.Get(server.URL + "/api/v1/pods?watch=true")
	require.NoError(t, err)
	log.end()
	resp.Body.Close()

	var got []APIRequest
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r APIRequest
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		require.False(t, r.Started.IsZero())
		r.Started, r.Seconds, r.Host = r.Started.UTC().Truncate(0), 0, ""
		got = append(got, r)
	}
	require.Len(t, got, 5)
	require.Equal(t, APIRequest{Method: "GET", URL: "/api/v1/pods?labelSelector=a%3Db", Status: 200, Read: 1000, Started: got[0].Started}, got[0])
	require.Equal(t, APIRequest{Method: "POST", URL: "/apis", Status: 200, Sent: 5, Started: got[1].Started}, got[1])
	require.Equal(t, 404, got[2].Status)
	require.Equal(t, "/nothing", got[3].URL)
	require.Zero(t, got[3].Status)
	require.Contains(t, got[3].Error, "connect")
	require.Equal(t, APIRequest{Method: "GET", URL: "/api/v1/pods?watch=true", Status: 200, Started: got[4].Started}, got[4])
}
