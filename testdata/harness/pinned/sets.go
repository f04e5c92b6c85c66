package pinned

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The programs the harness's tests build, set by set, in the order in which
// the tiers first need them: Helm 4 and the OCI registry (make integration),
// the API server
// (make e2e), the simulated cluster's controllers (make e2e-cluster).
// cmd/prebuild builds them all; each test builds the sets it uses.

// Set is the programs built from one wrapper module into one cache folder.
type Set struct {
	// Module is the wrapper module's folder, relative to the repository's
	// testdata folder.
	Module string
	// Cache is the name of the cache folder (see build).
	Cache    string
	Programs []Program
}

// Build builds the set's programs from the wrapper module below the
// repository's testdata folder, or reuses them, and returns the folder
// that holds them.
func (s Set) Build(testdata string, logf func(string, ...any)) (string, error) {
	return build(filepath.Join(testdata, s.Module), s.Cache, s.Programs, logf)
}

// KubeVersion is the Kubernetes release of the API server and of the
// programs built with it; it must match the require line of
// testdata/e2e/kube/go.mod.
const KubeVersion = "1.33.13"

// KubeServer is etcd, kube-apiserver and kubectl; KubeControllers is the
// controller manager and the scheduler of the same release, in the same
// cache folder.
var (
	KubeServer = kubeSet(
		Program{Name: "kube-apiserver", Package: "k8s.io/kubernetes/cmd/kube-apiserver", LDFlags: kubeLDFlags()},
		Program{Name: "kubectl", Package: "k8s.io/kubernetes/cmd/kubectl", LDFlags: kubeLDFlags()},
		Program{Name: "etcd", Package: "go.etcd.io/etcd/server/v3", LDFlags: "-s -w"},
	)
	KubeControllers = kubeSet(
		Program{Name: "kube-controller-manager", Package: "k8s.io/kubernetes/cmd/kube-controller-manager", LDFlags: kubeLDFlags()},
		Program{Name: "kube-scheduler", Package: "k8s.io/kubernetes/cmd/kube-scheduler", LDFlags: kubeLDFlags()},
	)
)

func kubeSet(programs ...Program) Set {
	return Set{Module: filepath.Join("e2e", "kube"), Cache: filepath.Join("e2e", "kube-"+KubeVersion), Programs: programs}
}

// kubeLDFlags are the link flags of the Kubernetes programs: real version
// strings (kubectl refuses to talk to a server whose version it cannot parse),
// and -s -w, which strips about 40% off the binaries.
func kubeLDFlags() string {
	major, minor, _ := strings.Cut(KubeVersion, ".")
	minor, _, _ = strings.Cut(minor, ".")
	ldflags := "-s -w"
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ldflags += fmt.Sprintf(" -X %s.gitVersion=v%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean",
			pkg, KubeVersion, pkg, major, pkg, minor, pkg)
	}
	return ldflags
}

// Controllers are the simulated cluster's controllers, by wrapper module:
// controllers whose Kubernetes libraries agree share one, so that those
// libraries are compiled once for all of them (see docs/design.md).
var Controllers = []Set{
	controllerSet("kwok-appwrapper-training-operator",
		Program{Name: "kwok", Module: "sigs.k8s.io/kwok", Package: "sigs.k8s.io/kwok/cmd/kwok"},
		Program{Name: "appwrapper", Module: "github.com/project-codeflare/appwrapper", Package: "github.com/project-codeflare/appwrapper/cmd"},
		Program{Name: "training-operator", Module: "github.com/kubeflow/training-operator", Package: "github.com/kubeflow/training-operator/cmd/training-operator.v1"},
	),
	controllerSet("kueue-jobset-trainer",
		Program{Name: "kueue", Module: "sigs.k8s.io/kueue", Package: "sigs.k8s.io/kueue/cmd/kueue"},
		Program{Name: "jobset", Module: "sigs.k8s.io/jobset", Package: "sigs.k8s.io/jobset"},
		Program{Name: "trainer", Module: "github.com/kubeflow/trainer/v2", Package: "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"},
	),
}

func controllerSet(dir string, programs ...Program) Set {
	for i := range programs {
		programs[i].LDFlags = "-s -w"
	}
	return Set{Module: filepath.Join("e2e", dir), Cache: filepath.Join("e2e", dir), Programs: programs}
}

// Helm4Module is the module path of Helm 4, whose helm command the wrapper
// module testdata/helm4 pins.
const Helm4Module = "helm.sh/helm/v4"

// Helm4 is the set of Helm 4's helm command, and its version: the one that
// the wrapper module below the repository's testdata folder pins.
func Helm4(testdata string) (Set, string, error) {
	version, err := Version(filepath.Join(testdata, "helm4"), Helm4Module)
	if err != nil {
		return Set{}, "", err
	}
	return Set{Module: "helm4", Cache: filepath.Join("helm4", "helm-"+version), Programs: []Program{{
		Name:    "helm",
		Module:  Helm4Module,
		Package: Helm4Module + "/cmd/helm",
		// What helm version prints, as in Helm's own release builds.
		LDFlags: "-s -w -X " + Helm4Module + "/internal/version.version=" + version,
	}}}, version, nil
}

// RegistryModule is the module path of the CNCF distribution registry,
// whose registry command the wrapper module testdata/registry pins.
const RegistryModule = "github.com/distribution/distribution/v3"

// Registry is the set of the distribution registry's registry command, and
// its version: the one that the wrapper module below the repository's
// testdata folder pins.
func Registry(testdata string) (Set, string, error) {
	version, err := Version(filepath.Join(testdata, "registry"), RegistryModule)
	if err != nil {
		return Set{}, "", err
	}
	return Set{Module: "registry", Cache: filepath.Join("registry", "registry-"+version), Programs: []Program{{
		Name:    "registry",
		Module:  RegistryModule,
		Package: RegistryModule + "/cmd/registry",
		// What registry --version prints, as in the project's release builds.
		LDFlags: "-s -w -X " + RegistryModule + "/version.version=" + version,
	}}}, version, nil
}

// BuildPinned builds (or reuses) the one program of a set of Helm4 or
// Registry and returns its path, once it has checked that the binary is
// built from the program's module at version, the one the wrapper module
// pins.
func (s Set) BuildPinned(testdata, version string, logf func(string, ...any)) (string, error) {
	dir, err := s.Build(testdata, logf)
	if err != nil {
		return "", err
	}
	p := s.Programs[0]
	path := filepath.Join(dir, p.Name)
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "", err
	}
	// go build names a package's module as the main one when the package
	// lies in a dependency of the wrapper module.
	for _, m := range append(info.Deps, &info.Main) {
		if m.Path == p.Module && m.Version == version {
			return path, nil
		}
	}
	return "", errors.New(path + " is not built from " + p.Module + " " + version)
}

// All is every set, in the order in which the tiers first need them.
func All(testdata string) ([]Set, error) {
	helm4, _, err := Helm4(testdata)
	if err != nil {
		return nil, err
	}
	registry, _, err := Registry(testdata)
	if err != nil {
		return nil, err
	}
	return append([]Set{helm4, registry, KubeServer, KubeControllers}, Controllers...), nil
}
