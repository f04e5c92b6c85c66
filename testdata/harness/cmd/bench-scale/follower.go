//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/testdata/harness/e2e"
)

// The follower's measure: a minute of a job that does not change, then
// changes said.
const (
	quietFor = time.Minute
	changes  = 5
)

// followers measures, for the generator and the generator -before, what a
// follower costs the API server while its job does not change, and how
// soon it tells a change: each follows a job of 2 pods with submit --wait,
// which once it runs is left quietFor, whose requests are counted (its
// API log); then the job is stopped and resumed changes times (by the
// generator measured), each change timed from the start of the command
// that makes it to the follower's line that says it (the stop's
// Suspended, the resume's next state).
func (b *bench) followers() error {
	tools := map[string]string{"generator": b.generator}
	if b.before != "" {
		tools["before"] = b.before
	}
	for _, tool := range slices.Sorted(maps.Keys(tools)) {
		s, err := b.follower(tool, tools[tool])
		if err != nil {
			return fmt.Errorf("%s: %w", tool, err)
		}
		b.add(result{Command: "follow a job of 2 pods", Pods: 2}, tool, []sample{s})
	}
	return nil
}

// follower measures one tool's follower (bin): the sample's PerMinute and
// Tell.
func (b *bench) follower(tool, bin string) (sample, error) {
	name := "follow-" + tool
	file := filepath.Join(b.tmp, name+".settings.yaml")
	if err := os.WriteFile(file, []byte(settings("PyTorchJob", name, e2e.SimScaleNamespace, scaleQueue, 2)), 0o644); err != nil {
		return sample{}, err
	}
	apiLog := filepath.Join(b.tmp, name+".jsonl")
	cmd := exec.Command(bin, "submit", "--wait", "-f", file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "KUBECONFIG="+b.cluster.Kubeconfig, "XDG_CACHE_HOME="+b.runner.cache, "NO_COLOR=1", cluster.APILogVariable+"="+apiLog)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return sample{}, err
	}
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		cmd.Wait()
	}
	defer stop()
	// Its lines, each with when it came.
	type said struct {
		at   time.Time
		line string
	}
	var mu sync.Mutex
	var lines []said
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			mu.Lock()
			lines = append(lines, said{time.Now(), scanner.Text()})
			mu.Unlock()
		}
	}()
	// saysAfter waits for a line after t that holds one of words, and
	// gives when it came.
	saysAfter := func(t time.Time, words ...string) (time.Time, error) {
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			for _, l := range lines {
				if l.at.After(t) && slices.ContainsFunc(words, func(w string) bool { return strings.Contains(l.line, w) }) {
					mu.Unlock()
					return l.at, nil
				}
			}
			mu.Unlock()
		}
		return time.Time{}, fmt.Errorf("the follower did not say %s", strings.Join(words, " or "))
	}
	if _, err := saysAfter(time.Time{}, ": Running"); err != nil {
		return sample{}, err
	}
	quiet := time.Now()
	time.Sleep(quietFor)
	var s sample
	for range changes {
		for _, change := range []struct {
			verb  string
			words []string
		}{{"stop", []string{": Suspended"}}, {"resume", []string{": Queued", ": Admitted", ": Running"}}} {
			start := time.Now()
			if out, err := exec.Command(b.generator, change.verb, name, "-n", e2e.SimScaleNamespace, "--kubeconfig", b.cluster.Kubeconfig).CombinedOutput(); err != nil {
				return s, fmt.Errorf("%s: %v: %s", change.verb, err, out)
			}
			told, err := saysAfter(start, change.words...)
			if err != nil {
				return s, err
			}
			s.Tell = append(s.Tell, told.Sub(start).Seconds())
			// The job settles before the next change, which comes at a
			// time of its own: a follower that reads the job every few
			// seconds would otherwise be asked at the same point of its
			// round each time.
			time.Sleep(3*time.Second + rand.N(2*time.Second))
		}
	}
	// Its watches are written to its API log as it ends.
	stop()
	requests, err := requestsBetween(apiLog, quiet, quiet.Add(quietFor))
	if err != nil {
		return s, err
	}
	s.PerMinute = float64(requests) / quietFor.Minutes()
	log.Printf("  %s: %.1f requests a minute while nothing changed; changes told after %v s", tool, s.PerMinute, s.Tell)
	_, err = exec.Command(b.generator, "delete", name, "-n", e2e.SimScaleNamespace, "--kubeconfig", b.cluster.Kubeconfig).CombinedOutput()
	return s, err
}

// requestsBetween counts the requests of an API log sent between from and
// to.
func requestsBetween(path string, from, to time.Time) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64*1024), 1<<20)
	for scanner.Scan() {
		var req cluster.APIRequest
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		if !req.Started.Before(from) && req.Started.Before(to) {
			n++
		}
	}
	return n, scanner.Err()
}
