//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/torchwrap/generator/pkg/cluster"
)

// sample is one run of a command: its wall time, its peak resident memory,
// and what it asked of the API server (the generator's own API log, or a
// count of kubectl's -v=6 lines): every request, the requests for logs
// apart, and the bytes read.
type sample struct {
	Seconds     float64 `json:"seconds"`
	RSSKiB      int64   `json:"rssKiB"`
	Requests    int     `json:"requests"`
	LogRequests int     `json:"logRequests"`
	Read        int64   `json:"read"`
	// Counted is false when the requests were not counted (kubectl timed
	// alone).
	Counted bool `json:"counted"`
	Exit    int  `json:"exit"`
	// A follower's (followers): the requests a minute of a job that does
	// not change, and the seconds each change took to be told.
	PerMinute float64   `json:"perMinute,omitempty"`
	Tell      []float64 `json:"tell,omitempty"`
}

// how says how a command runs: until a line of its standard error says
// so (submit --wait until Running), or for a while (logs -f), then it is
// interrupted as Ctrl-C would.
type how struct {
	until func(line string) bool
	for_  time.Duration
}

// runner runs the commands against one cluster, as its admin, each with a
// cache folder of the bench's (the failures the generator keeps).
type runner struct {
	kubeconfig, cache, tmp string
	mu                     sync.Mutex
	n                      int
}

// run runs a program with args and measures it. The generator writes its
// API log (cluster.APILogVariable) to a file of its own. The peak memory
// is GNU time's (/usr/bin/time): a child of this process would count the
// parent's memory as its own (Linux keeps the high-water mark of the
// memory it shared before exec).
func (r *runner) run(bin string, args []string, h how) (sample, error) {
	r.mu.Lock()
	r.n++
	apiLog := filepath.Join(r.tmp, fmt.Sprintf("api-%d.jsonl", r.n))
	peak := filepath.Join(r.tmp, fmt.Sprintf("rss-%d.txt", r.n))
	r.mu.Unlock()
	defer os.Remove(apiLog)
	defer os.Remove(peak)
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", peak, bin}, args...)...)
	// Ctrl-C goes to the group: GNU time ignores it, the program does not.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	interrupt := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.kubeconfig, "XDG_CACHE_HOME="+r.cache, "NO_COLOR=1", cluster.APILogVariable+"="+apiLog)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return sample{}, err
	}
	cmd.Stdout = nil // discarded
	var said []string
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	var timer *time.Timer
	if h.for_ > 0 {
		timer = time.AfterFunc(h.for_, interrupt)
	}
	scanner := bufio.NewScanner(stderr)
	scanner.Buffer(make([]byte, 64*1024), 1<<20)
	interrupted := false
	for scanner.Scan() {
		line := scanner.Text()
		if len(said) < 200 {
			said = append(said, line)
		}
		if h.until != nil && !interrupted && h.until(line) {
			interrupted = true
			interrupt()
		}
	}
	err = cmd.Wait()
	elapsed := time.Since(start)
	if timer != nil {
		timer.Stop()
	}
	s := sample{Seconds: elapsed.Seconds(), Exit: cmd.ProcessState.ExitCode()}
	if text, err := os.ReadFile(peak); err == nil {
		// The last line: GNU time says first how the program ended.
		lines := strings.Fields(string(text))
		if len(lines) > 0 {
			s.RSSKiB, _ = strconv.ParseInt(lines[len(lines)-1], 10, 64)
		}
	}
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		return s, err
	}
	// Interrupted on purpose, a program ends as it ends on Ctrl-C: the
	// generator with 130, kubectl by the signal.
	if s.Exit != 0 && !interrupted && h.for_ == 0 {
		return s, fmt.Errorf("%s %s: exit %d:\n%s", filepath.Base(bin), strings.Join(args, " "), s.Exit, strings.Join(said, "\n"))
	}
	if h.until != nil && !interrupted {
		return s, fmt.Errorf("%s %s ended before it said what was waited for:\n%s", filepath.Base(bin), strings.Join(args, " "), strings.Join(said, "\n"))
	}
	return s, r.count(apiLog, &s)
}

// count adds up the requests of an API log.
func (r *runner) count(path string, s *sample) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil // kubectl's runs, or none made
	}
	if err != nil {
		return err
	}
	defer f.Close()
	s.Counted = true
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64*1024), 1<<20)
	for scanner.Scan() {
		var req cluster.APIRequest
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		s.Requests++
		s.Read += req.Read
		if path, _, _ := strings.Cut(req.URL, "?"); strings.HasSuffix(path, "/log") {
			s.LogRequests++
		}
	}
	return scanner.Err()
}

// kubectlRequests counts the requests kubectl makes, from its -v=6 lines
// (`"Response" verb="GET" url="https://..." status="200 OK"`), in a run of
// its own: the logging costs time.
func (r *runner) kubectlRequests(kubectl string, args []string) (int, error) {
	cmd := exec.Command(kubectl, append(args, "-v=6")...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, `"Response" verb=`) {
			n++
		}
	}
	return n, nil
}

// median is the median of the samples, field by field.
func median(samples []sample) sample {
	pick := func(values []float64) float64 {
		slices.Sort(values)
		n := len(values)
		if n%2 == 1 {
			return values[n/2]
		}
		return (values[n/2-1] + values[n/2]) / 2
	}
	field := func(get func(sample) float64) float64 {
		var values []float64
		for _, s := range samples {
			values = append(values, get(s))
		}
		return pick(values)
	}
	m := sample{
		Seconds:     field(func(s sample) float64 { return s.Seconds }),
		RSSKiB:      int64(field(func(s sample) float64 { return float64(s.RSSKiB) })),
		Requests:    int(field(func(s sample) float64 { return float64(s.Requests) })),
		LogRequests: int(field(func(s sample) float64 { return float64(s.LogRequests) })),
		Read:        int64(field(func(s sample) float64 { return float64(s.Read) })),
		Counted:     samples[0].Counted,
		PerMinute:   field(func(s sample) float64 { return s.PerMinute }),
	}
	// A follower's changes, all of them.
	for _, s := range samples {
		m.Tell = append(m.Tell, s.Tell...)
	}
	return m
}
