package failure

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var job = Job{Cluster: "https://10.0.0.1:6443", Namespace: "ml", Name: "llama", UID: "0f3c"}

func failed(key string, at time.Time, lines ...string) Failure {
	code := int32(1)
	f := Failure{Key: key, Pod: "llama-" + key, Member: key, Container: "pytorch", Reason: "Error", ExitCode: &code, At: at}
	f.SetLines(lines)
	return f
}

func TestKeep(t *testing.T) {
	k := Keeper{Dir: filepath.Join(t.TempDir(), "failures")}
	story, err := k.Story(job)
	require.NoError(t, err)
	require.Empty(t, story.Attempts)

	added, err := k.Keep(job, 1, 4, failed("worker-0", start, "ValueError: x"))
	require.NoError(t, err)
	require.Equal(t, 1, added)
	// The same container again, with more of its lines: replaced.
	added, err = k.Keep(job, 1, 4, failed("worker-0", start, "step 9", "ValueError: x"))
	require.NoError(t, err)
	require.Zero(t, added)
	_, err = k.Keep(job, 2, 4, failed("master-0", start.Add(time.Minute), "KeyError: 'x'"))
	require.NoError(t, err)

	story, err = k.Story(job)
	require.NoError(t, err)
	require.Len(t, story.Attempts, 2)
	first, ok := story.Attempt(1)
	require.True(t, ok)
	require.Equal(t, []string{"step 9", "ValueError: x"}, first.Failures[0].Lines)
	require.Equal(t, 4, first.Of)
	require.Equal(t, "master-0", story.Attempts[1].Failures[0].Member)

	// Only the user may read what is kept: logs can hold secrets.
	for _, dir := range []string{k.Dir, k.uidDir(job)} {
		info, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), dir)
	}
	files, err := filepath.Glob(filepath.Join(k.uidDir(job), "attempt-*.json"))
	require.NoError(t, err)
	for _, f := range files {
		info, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
	}

	// Another job of the same name (submitted again) is another story;
	// Forget removes both.
	again := job
	again.UID = "77aa"
	_, err = k.Keep(again, 1, 0, failed("worker-0", start))
	require.NoError(t, err)
	require.NoError(t, k.Forget(job))
	for _, j := range []Job{job, again} {
		story, err := k.Story(j)
		require.NoError(t, err)
		require.Empty(t, story.Attempts)
	}
}

// What is kept is bounded: the last lines of a failure, each cut; the lines
// of the first failures of an attempt; the first and latest attempts; the
// latest jobs.
func TestKeepIsBounded(t *testing.T) {
	k := Keeper{Dir: t.TempDir()}
	many := make([]string, 500)
	for i := range many {
		many[i] = fmt.Sprintf("line %d %s", i, strings.Repeat("x", 1000))
	}
	f := failed("worker-0", start, many...)
	require.Len(t, f.Lines, maxLines)
	require.True(t, strings.HasPrefix(f.Lines[maxLines-1], "line 499 "))
	require.LessOrEqual(t, len(f.Lines[0]), maxLineBytes+len("…"))

	for i := range 10 {
		_, err := k.Keep(job, 1, 0, failed(fmt.Sprintf("worker-%d", i), start.Add(time.Duration(i)*time.Second), many...))
		require.NoError(t, err)
	}
	story, err := k.Story(job)
	require.NoError(t, err)
	withLines := 0
	for _, f := range story.Attempts[0].Failures {
		if len(f.Lines) > 0 {
			withLines++
		}
	}
	require.Equal(t, WithLines, withLines)
	require.Len(t, story.Attempts[0].Failures, 10)

	for n := 2; n <= 15; n++ {
		_, err := k.Keep(job, n, 0, failed("worker-0", start))
		require.NoError(t, err)
	}
	story, err = k.Story(job)
	require.NoError(t, err)
	var numbers []int
	for _, a := range story.Attempts {
		numbers = append(numbers, a.Number)
	}
	require.Equal(t, []int{1, 7, 8, 9, 10, 11, 12, 13, 14, 15}, numbers)

	for i := range maxJobs + 5 {
		j := job
		j.Name = fmt.Sprintf("job-%03d", i)
		_, err := k.Keep(j, 1, 0, failed("worker-0", start))
		require.NoError(t, err)
	}
	kept, err := filepath.Glob(filepath.Join(k.Dir, "*", "*", "*", "*"))
	require.NoError(t, err)
	require.Len(t, kept, maxJobs)
	last := job
	last.Name = fmt.Sprintf("job-%03d", maxJobs+4)
	story, err = k.Story(last)
	require.NoError(t, err)
	require.Len(t, story.Attempts, 1, "the job written last is kept")
}

// Two followers of one job keep at once: nothing is lost, no file is torn.
func TestKeepFromTwoFollowers(t *testing.T) {
	k := Keeper{Dir: t.TempDir()}
	var wg sync.WaitGroup
	for follower := range 2 {
		wg.Go(func() {
			for i := range 20 {
				_, err := k.Keep(job, 1, 0, failed(fmt.Sprintf("f%d-pod-%d", follower, i), start.Add(time.Duration(i)*time.Second)))
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	story, err := k.Story(job)
	require.NoError(t, err)
	require.Len(t, story.Attempts[0].Failures, 40)
	entries, err := os.ReadDir(k.uidDir(job))
	require.NoError(t, err)
	for _, e := range entries {
		require.Equal(t, "attempt-1.json", e.Name(), "no lock or temporary file is left")
	}
}

// A lock left by a process that died is taken over once stale.
func TestStaleLock(t *testing.T) {
	k := Keeper{Dir: t.TempDir()}
	require.NoError(t, k.mkdir(k.uidDir(job)))
	held := attemptFile(k.uidDir(job), 1) + ".lock"
	require.NoError(t, os.WriteFile(held, nil, 0o600))
	old := time.Now().Add(-2 * lockStale)
	require.NoError(t, os.Chtimes(held, old, old))
	_, err := k.Keep(job, 1, 0, failed("worker-0", start))
	require.NoError(t, err)
	_, err = os.Stat(held)
	require.ErrorIs(t, err, os.ErrNotExist)
}
