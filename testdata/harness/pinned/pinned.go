// Package pinned builds programs from a wrapper Go module checked into
// testdata, which pins their versions, into the user's cache folder, outside
// the repository, so that later runs reuse them.
//
// The cache folder of a build is keyed by the wrapper module's go.mod and
// go.sum and by the Go version: changing the pins builds afresh.
package pinned

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Program is a main package of the wrapper module to build.
type Program struct {
	// Name is the file name of the binary in the cache folder.
	Name string
	// Package is the import path of the main package.
	Package string
	// LDFlags are passed to go build -ldflags.
	LDFlags string
}

// Build builds each program from the wrapper module in the folder module, or
// reuses it from an earlier build, in
// os.UserCacheDir()/torchwrap-generator/<name>-<key>, and returns that
// folder. logf reports progress.
func Build(module, name string, programs []Program, logf func(string, ...any)) (string, error) {
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
		out := filepath.Join(dir, p.Name)
		if _, err := os.Stat(out); err == nil {
			logf("reusing %s", out)
			continue
		}
		start := time.Now()
		logf("building %s (a cold build takes minutes)", p.Package)
		// A name of our own: another process may be building the same.
		tmp := fmt.Sprintf("%s.partial-%d", out, os.Getpid())
		// Without debug information: the programs are test fixtures, and
		// the compiler's DWARF is about 5% of a cold build.
		cmd := exec.Command("go", "build", "-gcflags=all=-dwarf=false", "-ldflags", p.LDFlags, "-o", tmp, p.Package)
		cmd.Dir = module
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			return "", fmt.Errorf("go build %s: %v\n%s", p.Package, err, out)
		}
		if err := os.Rename(tmp, out); err != nil {
			return "", err
		}
		logf("built %s in %s", out, time.Since(start).Round(time.Second))
	}
	return dir, nil
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
