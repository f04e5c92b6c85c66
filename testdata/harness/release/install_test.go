package release_test

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
	"sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/testdata/cases"
)

const modulePath = "github.com/torchwrap/generator"

// TestGoInstallFromModuleProxy checks that
//
//	go install github.com/torchwrap/generator/cmd/generator@VERSION
//
// works once the module is published, without publishing it: the module at
// HEAD is zipped the way a proxy serves a tag (golang.org/x/mod/zip, from git,
// so only what a release would hold), laid out as a file-based module proxy in
// a temporary folder, and installed from there with the go command. The
// installed binary must render the helloworld example to the same bytes as the
// binary built from the source tree, and name VERSION in generator version.
//
// The version is v + the chart's version at HEAD. The fake module goes into a
// temporary module cache, so the user's cache never holds a version that was
// not published. The real dependencies are read from the user's module cache
// (laid out as a proxy), then proxy.golang.org, and checked against the
// checksum database as in any go install; only this module is exempt
// (GONOSUMDB), since the database has never seen it. -trimpath keeps the
// compiled dependencies in the build cache valid from run to run, although
// the module cache is in a new folder each time.
func TestGoInstallFromModuleProxy(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	require.NoError(t, err, "the go command")
	root := cases.Path(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git: the module zip is made from the repository at HEAD")
	}
	top, err := gitOutput(root, "rev-parse", "--show-toplevel")
	if err != nil {
		t.Skipf("needs the git repository of the module (the zip is made from HEAD): %v", err)
	}
	require.Equal(t, evalSymlinks(t, root), evalSymlinks(t, strings.TrimSpace(string(top))),
		"the module must be at the root of its repository for a tag vX.Y.Z to name its versions")

	// go install pkg@version refuses a module whose go.mod replaces or
	// excludes modules; check the work tree too, to say so before a release.
	headGoMod := gitShow(t, root, "go.mod")
	workGoMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	for name, data := range map[string][]byte{"go.mod at HEAD": headGoMod, "go.mod in the work tree": workGoMod} {
		f, err := modfile.Parse(name, data, nil)
		require.NoError(t, err, name)
		require.Equal(t, modulePath, f.Module.Mod.Path, name)
		require.Empty(t, f.Replace, "%s has replace directives: go install %s/cmd/generator@version would refuse the module", name, modulePath)
		require.Empty(t, f.Exclude, "%s has exclude directives: go install %s/cmd/generator@version would refuse the module", name, modulePath)
	}

	var chart struct{ Version string }
	require.NoError(t, yaml.Unmarshal(gitShow(t, root, "chart/Chart.yaml"), &chart))
	version := "v" + chart.Version
	require.True(t, semver.IsValid(version), "chart version %q makes module version %q, which is not semantic", chart.Version, version)
	require.Contains(t, []string{"v0", "v1"}, semver.Major(version),
		"a tag %s needs the module path to end in /%s", version, semver.Major(version))
	mod := module.Version{Path: modulePath, Version: version}

	// The proxy: $GOPROXY/<module>/@v/{list,VERSION.info,VERSION.mod,VERSION.zip}.
	proxy := t.TempDir()
	escPath, err := module.EscapePath(mod.Path)
	require.NoError(t, err)
	escVersion, err := module.EscapeVersion(mod.Version)
	require.NoError(t, err)
	versions := filepath.Join(proxy, filepath.FromSlash(escPath), "@v")
	require.NoError(t, os.MkdirAll(versions, 0o755))
	zipPath := filepath.Join(versions, escVersion+".zip")
	writeModuleZip(t, zipPath, mod, root)
	files := zipFiles(t, zipPath, mod)

	// The zip holds every file git tracks at HEAD but those of nested modules
	// (folders with their own go.mod), which belong to those modules.
	tracked, err := gitOutput(root, "ls-tree", "-r", "--name-only", "-z", "HEAD")
	require.NoError(t, err)
	var want, nested []string
	trackedFiles := strings.Split(strings.TrimSuffix(string(tracked), "\x00"), "\x00")
	for _, name := range trackedFiles {
		if inNestedModule(name, trackedFiles) {
			nested = append(nested, name)
			continue
		}
		want = append(want, name)
	}
	sort.Strings(want)
	require.Equal(t, want, slices.Sorted(maps.Keys(files)), "the files of the module zip")
	t.Logf("module zip %s@%s: %d files; left out as nested modules: %s", mod.Path, mod.Version, len(files), strings.Join(nested, " "))
	for _, name := range []string{"go.mod", "go.sum", "cmd/generator/main.go", "chart/Chart.yaml", "chart/values.yaml", "chart/templates/manifest.yaml"} {
		require.Contains(t, files, name, "the module zip")
	}
	require.Equal(t, string(headGoMod), string(files["go.mod"]))

	commit, err := gitOutput(root, "log", "-1", "--format=%H %cI", "HEAD")
	require.NoError(t, err)
	hash, when, ok := strings.Cut(strings.TrimSpace(string(commit)), " ")
	require.True(t, ok, "%q", commit)
	committed, err := time.Parse(time.RFC3339, when)
	require.NoError(t, err)
	info, err := json.Marshal(map[string]any{
		"Version": mod.Version,
		"Time":    committed.UTC().Format(time.RFC3339),
		"Origin": map[string]string{
			"VCS":  "git",
			"URL":  "https://" + modulePath,
			"Ref":  "refs/tags/" + mod.Version,
			"Hash": hash,
		},
	})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(versions, escVersion+".info"), info, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(versions, escVersion+".mod"), headGoMod, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(versions, "list"), []byte(mod.Version+"\n"), 0o644))
	zipHash, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	require.NoError(t, err)

	// go install from that proxy, then the user's module cache, then the
	// real proxy, with a temporary module cache and GOBIN.
	userModCache, err := exec.Command(goCmd, "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	proxies := []string{fileURL(proxy)}
	if dir := strings.TrimSpace(string(userModCache)); dir != "" {
		proxies = append(proxies, fileURL(filepath.Join(dir, "cache", "download")))
	}
	proxies = append(proxies, "https://proxy.golang.org")
	gobin := t.TempDir()
	env := goEnv(map[string]string{
		"GOPROXY":     strings.Join(proxies, ","),
		"GONOSUMDB":   modulePath,
		"GONOPROXY":   "",
		"GOPRIVATE":   "",
		"GOINSECURE":  "",
		"GOMODCACHE":  t.TempDir(),
		"GOBIN":       gobin,
		"GOFLAGS":     "-modcacherw -trimpath",
		"GOWORK":      "off",
		"GOTOOLCHAIN": "local",
	})
	install := exec.Command(goCmd, "install", modulePath+"/cmd/generator@"+mod.Version)
	install.Dir = t.TempDir() // outside any module
	install.Env = env
	start := time.Now()
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", strings.Join(install.Args, " "), out)
	t.Logf("%s: %v", strings.Join(install.Args, " "), time.Since(start).Round(time.Millisecond))
	installed := filepath.Join(gobin, "generator"+exeSuffix())

	// The binary says where it comes from: this module at VERSION, with the
	// hash of the zip above, and dependencies with the hashes of go.sum.
	bi, err := buildinfo.ReadFile(installed)
	require.NoError(t, err)
	require.Equal(t, mod.Path, bi.Main.Path)
	require.Equal(t, mod.Version, bi.Main.Version)
	require.Equal(t, zipHash, bi.Main.Sum, "the installed module is the zip of the proxy")
	sums := goSum(t, files["go.sum"])
	for _, dep := range bi.Deps {
		require.Nil(t, dep.Replace, "%s@%s", dep.Path, dep.Version)
		require.Equal(t, sums[dep.Path+"@"+dep.Version], dep.Sum, "%s@%s: the installed hash is the one of go.sum", dep.Path, dep.Version)
		require.NotEqual(t, "golang.org/x/mod", dep.Path, "golang.org/x/mod is for tests only")
	}

	// The binary built from the source: the work tree when it is HEAD, as in
	// CI; otherwise the files of HEAD, which the zip holds.
	source := root
	status, err := gitOutput(root, "status", "--porcelain", "--untracked-files=all")
	require.NoError(t, err)
	if len(status) > 0 {
		source = t.TempDir()
		extractHead(t, root, source)
		t.Logf("the work tree differs from HEAD; comparing with a build of HEAD's files:\n%s", status)
	}
	reference := filepath.Join(t.TempDir(), "generator"+exeSuffix())
	build := exec.Command(goCmd, "build", "-o", reference, "./cmd/generator")
	build.Dir = source
	out, err = build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	refInfo, err := buildinfo.ReadFile(reference)
	require.NoError(t, err)
	require.Equal(t, depList(refInfo), depList(bi), "the dependencies of the built and installed binaries")

	example := []string{"render", "-f", filepath.Join("examples", "helloworld.settings.yaml")}
	rendered := run(t, source, reference, example...)
	require.NotEmpty(t, rendered)
	require.Equal(t, rendered, run(t, source, installed, example...), "the installed binary renders as the built one")

	versionOut := run(t, source, installed, "version")
	require.True(t, strings.HasPrefix(versionOut, "generator "+mod.Version+"\n"), "generator version:\n%s", versionOut)
	require.Regexp(t, `(?m)^chart\s+torchwrap\s+`+regexp.QuoteMeta(chart.Version)+`\b`, versionOut, "generator version")
}

// writeModuleZip writes the module zip of mod from the repository's HEAD.
func writeModuleZip(t *testing.T, zipPath string, mod module.Version, root string) {
	t.Helper()
	f, err := os.Create(zipPath)
	require.NoError(t, err)
	err = modzip.CreateFromVCS(f, mod, root, "HEAD", "")
	require.NoError(t, f.Close())
	var notGit *modzip.UnrecognizedVCSError
	if errors.As(err, &notGit) {
		// x/mod/zip wants ROOT/.git to be the git folder (not a git worktree).
		t.Skipf("golang.org/x/mod/zip cannot read this checkout: %v", err)
	}
	require.NoError(t, err)
	checked, err := modzip.CheckZip(mod, zipPath)
	require.NoError(t, err)
	require.NoError(t, checked.Err())
}

// zipFiles reads a module zip: file names without the module@version/ prefix.
func zipFiles(t *testing.T, zipPath string, mod module.Version) map[string][]byte {
	t.Helper()
	r, err := zip.OpenReader(zipPath)
	require.NoError(t, err)
	defer r.Close()
	prefix := mod.Path + "@" + mod.Version + "/"
	files := map[string][]byte{}
	for _, f := range r.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		require.True(t, ok, "%s is outside %s", f.Name, prefix)
		rc, err := f.Open()
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		files[name] = data
	}
	return files
}

// inNestedModule reports whether a file lies in a folder, below the root,
// that holds a go.mod.
func inNestedModule(name string, tracked []string) bool {
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if slices.Contains(tracked, dir+"/go.mod") {
			return true
		}
	}
	return false
}

// goSum reads the hashes of module zips in a go.sum: path@version to h1:...
func goSum(t *testing.T, data []byte) map[string]string {
	t.Helper()
	sums := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		fields := strings.Fields(s.Text())
		require.Len(t, fields, 3, "go.sum line %q", s.Text())
		if !strings.HasSuffix(fields[1], "/go.mod") {
			sums[fields[0]+"@"+fields[1]] = fields[2]
		}
	}
	require.NoError(t, s.Err())
	require.NotEmpty(t, sums)
	return sums
}

func depList(bi *buildinfo.BuildInfo) []string {
	var deps []string
	for _, d := range bi.Deps {
		deps = append(deps, d.Path+"@"+d.Version+" "+d.Sum)
	}
	return deps
}

// extractHead writes the files git tracks at HEAD into dir.
func extractHead(t *testing.T, root, dir string) {
	t.Helper()
	archive, err := gitOutput(root, "archive", "--format=tar", "HEAD")
	require.NoError(t, err)
	r := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := r.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(target, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
			data, err := io.ReadAll(r)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(target, data, h.FileInfo().Mode().Perm()))
		case tar.TypeXGlobalHeader:
		default:
			t.Fatalf("git archive: %s has type %c", h.Name, h.Typeflag)
		}
	}
}

// run runs a generator binary in dir and returns what it printed.
func run(t *testing.T, dir, binary string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s %s:\n%s", binary, strings.Join(args, " "), stderr.String())
	require.Empty(t, stderr.String(), "%s %s", binary, strings.Join(args, " "))
	return stdout.String()
}

// goEnv is the environment with the given go variables set, and no others of
// those names.
func goEnv(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok {
			env = append(env, kv)
		}
	}
	for name, value := range set {
		env = append(env, name+"="+value)
	}
	return env
}

func gitOutput(dir string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func gitShow(t *testing.T, root, name string) []byte {
	t.Helper()
	data, err := gitOutput(root, "show", "HEAD:"+name)
	require.NoError(t, err)
	return data
}

func fileURL(dir string) string {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/x on Windows
	}
	return "file://" + p
}

func evalSymlinks(t *testing.T, p string) string {
	t.Helper()
	resolved, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return resolved
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}
