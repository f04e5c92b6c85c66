package failure

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Job names a job whose failures are kept: the cluster (its API server's
// address), the namespace, the name, and the uid of this job of that name.
type Job struct {
	Cluster, Namespace, Name, UID string
}

// Keeper keeps what followers saw of jobs' failures, on the user's machine,
// so that status and logs can tell it after the pods are gone: a folder
// per job, a JSON file per attempt (an Attempt), in a folder only the user
// may read, since logs can hold secrets. It is bounded: the last lines of
// each failure (SetLines), the failures of an attempt with lines, the
// attempts of a job (the first and the latest), and the jobs (the latest
// written). Two followers of one job may keep at once: a write takes a
// lock beside the file, merges, and renames a whole new file into place.
type Keeper struct {
	// Dir is the folder of all that is kept.
	Dir string
}

// The bounds of what is kept.
const (
	// WithLines failures of an attempt keep their lines, the first to
	// end; the others keep the rest. (A follower reads the logs of as
	// many: the first it notices.)
	WithLines = 4
	// maxFailures failures of an attempt are kept.
	maxFailures = 64
	// maxAttempts attempts of a job are kept: the first, and the latest.
	maxAttempts = 10
	// maxJobs jobs are kept: those written last.
	maxJobs = 100
	// lockWait is how long a write waits for another's lock, and lockStale
	// how old a lock is left behind by a process that died.
	lockWait  = 10 * time.Second
	lockStale = 30 * time.Second
)

// DefaultKeeper keeps in the user's cache folder: on Linux
// $XDG_CACHE_HOME/torchwrap-generator/failures, else
// ~/.cache/torchwrap-generator/failures; on macOS below ~/Library/Caches.
func DefaultKeeper() (Keeper, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return Keeper{}, fmt.Errorf("finding the folder to keep why jobs failed: %w", err)
	}
	return Keeper{Dir: filepath.Join(cache, "torchwrap-generator", "failures")}, nil
}

// unsafe are the characters a folder name does not keep, of a cluster's
// address: https://10.0.0.1:6443 is https_10.0.0.1_6443.
var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// jobDir is the folder of the jobs of a name; its uid's is below it.
func (k Keeper) jobDir(job Job) string {
	cluster := strings.Trim(unsafe.ReplaceAllString(job.Cluster, "_"), "_")
	return filepath.Join(k.Dir, cluster, job.Namespace, job.Name)
}

func (k Keeper) uidDir(job Job) string { return filepath.Join(k.jobDir(job), job.UID) }

func attemptFile(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("attempt-%d.json", n))
}

// Keep adds failures to an attempt of a job, each replacing the one of the
// same key (a container's termination message, then its log's last lines),
// in one write: status keeps what every pod of a large job shows at once.
// It tells how many of them are new.
func (k Keeper) Keep(job Job, number, of int, failures ...Failure) (int, error) {
	dir := k.uidDir(job)
	if err := k.mkdir(dir); err != nil {
		return 0, err
	}
	path := attemptFile(dir, number)
	unlock, err := lock(path + ".lock")
	if err != nil {
		return 0, err
	}
	defer unlock()
	a, err := readAttempt(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		a = Attempt{Number: number}
	case err != nil:
		return 0, err
	}
	a.Of = max(a.Of, of)
	added := 0
	for _, f := range failures {
		switch i := slices.IndexFunc(a.Failures, func(g Failure) bool { return g.Key == f.Key }); {
		case i < 0:
			a.Failures = append(a.Failures, f)
			added++
		case len(f.Lines) >= len(a.Failures[i].Lines):
			a.Failures[i] = f
		}
	}
	a.bound()
	if err := writeFile(path, a); err != nil {
		return 0, err
	}
	return added, k.prune(job, dir)
}

// bound sorts the failures by when they failed and keeps the first ones,
// the lines of the first few only.
func (a *Attempt) bound() {
	a.Failures = inTime(a.Failures)
	if len(a.Failures) > maxFailures {
		a.Failures, a.Cut = a.Failures[:maxFailures], true
	}
	root, _ := a.Root()
	withLines := 0
	for i := range a.Failures {
		f := &a.Failures[i]
		if f.Key != root.Key && withLines >= WithLines-1 {
			f.Lines = nil
		} else if f.Key != root.Key && len(f.Lines) > 0 {
			withLines++
		}
	}
}

// Story reads what was kept of a job, the first attempt first.
func (k Keeper) Story(job Job) (Story, error) {
	dir := k.uidDir(job)
	numbers, err := attempts(dir)
	if err != nil {
		return Story{}, err
	}
	var s Story
	for _, n := range numbers {
		a, err := readAttempt(attemptFile(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned meanwhile
		}
		if err != nil {
			return Story{}, err
		}
		s.Attempts = append(s.Attempts, a)
	}
	return s, nil
}

// Forget removes what was kept of the jobs of a name (of every uid): a job
// deleted goes with its story.
func (k Keeper) Forget(job Job) error {
	if err := os.RemoveAll(k.jobDir(job)); err != nil {
		return fmt.Errorf("removing what was kept of why %s failed: %w", job.Name, err)
	}
	return nil
}

// mkdir makes a folder below Dir, and Dir itself, only the user's.
func (k Keeper) mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making the folder that keeps why jobs failed: %w", err)
	}
	// A folder made before by other means may let others in.
	if err := os.Chmod(k.Dir, 0o700); err != nil {
		return fmt.Errorf("keeping %s to you alone: %w", k.Dir, err)
	}
	return nil
}

// attempts lists the numbers of the attempts kept in a folder, in order.
func attempts(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading what was kept of why the job failed: %w", err)
	}
	var numbers []int
	for _, e := range entries {
		name, ok := strings.CutSuffix(strings.TrimPrefix(e.Name(), "attempt-"), ".json")
		if n, err := strconv.Atoi(name); ok && err == nil && strings.HasPrefix(e.Name(), "attempt-") {
			numbers = append(numbers, n)
		}
	}
	slices.Sort(numbers)
	return numbers, nil
}

// prune keeps the first and the latest attempts of the job just written,
// and the jobs written last.
func (k Keeper) prune(job Job, dir string) error {
	numbers, err := attempts(dir)
	if err != nil {
		return err
	}
	if len(numbers) > maxAttempts {
		for _, n := range numbers[1 : len(numbers)-maxAttempts+1] {
			if err := os.Remove(attemptFile(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	now := time.Now()
	if err := os.Chtimes(dir, now, now); err != nil {
		return err
	}
	// Dir/cluster/namespace/name/uid.
	jobs, _ := filepath.Glob(filepath.Join(k.Dir, "*", "*", "*", "*"))
	if len(jobs) <= maxJobs {
		return nil
	}
	written := map[string]time.Time{}
	for _, j := range jobs {
		if info, err := os.Stat(j); err == nil {
			written[j] = info.ModTime()
		}
	}
	slices.SortFunc(jobs, func(a, b string) int { return written[b].Compare(written[a]) })
	for _, old := range jobs[maxJobs:] {
		if err := os.RemoveAll(old); err != nil {
			return err
		}
		// The folders of its name and namespace, once empty.
		os.Remove(filepath.Dir(old))
		os.Remove(filepath.Dir(filepath.Dir(old)))
	}
	return nil
}

func readAttempt(path string) (Attempt, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Attempt{}, err
	}
	var a Attempt
	if err := json.Unmarshal(data, &a); err != nil {
		return Attempt{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return a, nil
}

// writeFile writes the attempt to a new file beside path, then renames it
// over path: a reader sees the old file or the new one, never a part.
func writeFile(path string, a Attempt) error {
	data, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".attempt-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("keeping why the job failed: %w", err)
	}
	return nil
}

// lock takes the lock at path, a file made with O_EXCL, waiting for
// another's; one older than lockStale was left by a process that died, and
// is taken over. It returns the unlock.
func lock(path string) (func(), error) {
	deadline := time.Now().Add(lockWait)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("keeping why the job failed: %w", err)
		}
		if info, err := os.Stat(path); err == nil && time.Since(info.ModTime()) > lockStale {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("keeping why the job failed: %s is held by another process for more than %v; remove it if none runs", path, lockWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
