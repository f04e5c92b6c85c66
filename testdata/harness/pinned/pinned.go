// Package pinned builds programs from wrapper Go modules checked into
// testdata, which pin their versions, into the user's cache folder, outside
// the repository, so that later runs reuse them; sets.go says which.
//
// The cache folder of a build is keyed by the wrapper module's go.mod and
// go.sum and by the Go version: changing the pins builds afresh. A program
// is built by one process at a time: another that needs it meanwhile waits
// for it (a lock file beside it) and reuses it.
package pinned

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Program is a main package of the wrapper module to build.
type Program struct {
	// Name is the file name of the binary in the cache folder.
	Name string
	// Module is the module path that holds Package.
	Module string
	// Package is the import path of the main package.
	Package string
	// LDFlags are passed to go build -ldflags.
	LDFlags string
}

// build builds each program from the wrapper module in the folder module, or
// reuses it from an earlier build, in
// os.UserCacheDir()/torchwrap-generator/<name>-<key>, and returns that
// folder. logf reports progress.
func build(module, name string, programs []Program, logf func(string, ...any)) (string, error) {
	key, err := cacheKey(module)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "torchwrap-generator", name+"-"+key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, p := range programs {
		if err := buildOne(module, filepath.Join(dir, p.Name), p, logf); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// buildOne builds the program p into the file out, unless it is there,
// holding out's lock while it looks and builds.
func buildOne(module, out string, p Program, logf func(string, ...any)) error {
	lock, err := os.OpenFile(out+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	// Closing the file releases the lock, and so does the process's end.
	defer lock.Close()
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		start := time.Now()
		logf("waiting for another process's build of %s", p.Package)
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			return fmt.Errorf("locking %s: %w", lock.Name(), err)
		}
		logf("waited %s", time.Since(start).Round(time.Second))
	}
	if _, err := os.Stat(out); err == nil {
		logf("reusing %s", out)
		return nil
	}
	start := time.Now()
	logf("building %s (a cold build takes minutes)", p.Package)
	tmp := out + ".partial"
	// Without debug information: the programs are test fixtures, and the
	// compiler's DWARF is about 5% of a cold build.
	cmd := exec.Command("go", "build", "-gcflags=all=-dwarf=false", "-ldflags", p.LDFlags, "-o", tmp, p.Package)
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	if output, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("go build %s: %v\n%s", p.Package, err, output)
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	// The processor time is go build's and that of the compiles and the
	// link it ran, which it waited for.
	state := cmd.ProcessState
	logf("built %s in %s (%s of processor time: %s user, %s system)", out, time.Since(start).Round(time.Second),
		(state.UserTime() + state.SystemTime()).Round(time.Second), state.UserTime().Round(time.Second), state.SystemTime().Round(time.Second))
	return nil
}

// cacheKey identifies a build: the pinned module and the Go version.
func cacheKey(module string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(module, f))
		if err != nil {
			return "", err
		}
		h.Write(data)
	}
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", err
	}
	h.Write(out)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Version is the version of the module path that the wrapper module in the
// folder module requires in its go.mod.
func Version(module, path string) (string, error) {
	data, err := os.ReadFile(filepath.Join(module, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == path {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s/go.mod does not require %s", module, path)
}
