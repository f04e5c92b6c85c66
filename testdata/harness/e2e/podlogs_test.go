//go:build linux

package e2e

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a buffer that a following reader writes while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestContainerLog(t *testing.T) {
	log, err := newContainerLog(filepath.Join(t.TempDir(), "pytorch-0.log"))
	require.NoError(t, err)
	out, errs := &lineWriter{log: log}, &lineWriter{log: log}
	io.WriteString(out, "one\ntw")
	io.WriteString(errs, "warning\n")
	io.WriteString(out, "o\nthree")
	out.flush()

	serve := func(o logOptions) string {
		var b bytes.Buffer
		require.NoError(t, log.serve(context.Background(), &b, o))
		return b.String()
	}
	all := logOptions{tail: -1}
	require.Equal(t, "one\nwarning\ntwo\nthree\n", serve(all))
	require.Equal(t, "two\nthree\n", serve(logOptions{tail: 2}))
	require.Equal(t, "", serve(logOptions{tail: 0}))
	require.Equal(t, "one\nwar", serve(logOptions{tail: -1, limit: 7}))
	require.Equal(t, "", serve(logOptions{tail: -1, since: time.Now().Add(time.Minute)}))
	stamped := strings.Split(strings.TrimSuffix(serve(logOptions{tail: -1, timestamps: true}), "\n"), "\n")
	require.Len(t, stamped, 4)
	for _, line := range stamped {
		stamp, _, _ := strings.Cut(line, " ")
		_, err := time.Parse(time.RFC3339Nano, stamp)
		require.NoError(t, err, line)
	}

	// Following: what is there, what comes, and the end of the run.
	var followed syncBuffer
	done := make(chan error)
	go func() { done <- log.serve(context.Background(), &followed, logOptions{tail: 1, follow: true}) }()
	require.Eventually(t, func() bool { return followed.String() == "three\n" }, 5*time.Second, 10*time.Millisecond)
	io.WriteString(out, "four\n")
	require.Eventually(t, func() bool { return followed.String() == "three\nfour\n" }, 5*time.Second, 10*time.Millisecond)
	log.end()
	require.NoError(t, <-done)
	io.WriteString(out, "after the end\n")
	require.Equal(t, "one\nwarning\ntwo\nthree\nfour\n", serve(all))
}

func TestParseLogOptions(t *testing.T) {
	o, err := parseLogOptions(map[string][]string{"follow": {"true"}, "tailLines": {"5"}, "timestamps": {"true"}, "limitBytes": {"10"}})
	require.NoError(t, err)
	require.Equal(t, logOptions{follow: true, timestamps: true, tail: 5, limit: 10}, o)
	o, err = parseLogOptions(map[string][]string{"sinceSeconds": {"60"}})
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(-time.Minute), o.since, 5*time.Second)
	for _, bad := range []map[string][]string{{"tailLines": {"-1"}}, {"sinceSeconds": {"0"}}, {"sinceTime": {"yesterday"}}, {"limitBytes": {"x"}}} {
		_, err := parseLogOptions(bad)
		require.Error(t, err, "%v", bad)
	}
}

// A failed container's termination message, with FallbackToLogsOnError, is
// what a kubelet makes of its log: the last 80 lines, then the last 2048
// bytes of those.
func TestTerminationMessage(t *testing.T) {
	log, err := newContainerLog(filepath.Join(t.TempDir(), "pytorch-0.log"))
	require.NoError(t, err)
	w := &lineWriter{log: log}
	for i := range 100 {
		io.WriteString(w, strings.Repeat("x", i%3)+"line "+strings.Repeat("y", i/50)+"\n")
	}
	log.end()
	message := log.terminationMessage()
	lines := strings.Split(strings.TrimSuffix(message, "\n"), "\n")
	require.Len(t, lines, terminationMessageLines)
	require.Equal(t, "line y", lines[len(lines)-1][len(lines[len(lines)-1])-len("line y"):])

	long, err := newContainerLog(filepath.Join(t.TempDir(), "pytorch-1.log"))
	require.NoError(t, err)
	w = &lineWriter{log: long}
	for range 10 {
		io.WriteString(w, strings.Repeat("z", 500)+"\n")
	}
	io.WriteString(w, "ZeroDivisionError: division by zero\n")
	long.end()
	message = long.terminationMessage()
	require.Len(t, message, terminationMessageBytes)
	require.True(t, strings.HasSuffix(message, "z\nZeroDivisionError: division by zero\n"), message)
}
