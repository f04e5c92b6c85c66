package registry

import (
	"debug/buildinfo"
	"errors"
	"path/filepath"

	"github.com/torchwrap/generator/testdata/harness/pinned"
)

// Binary builds (or finds in the user's cache folder) the registry command
// of pinned.Registry and checks that it is the distribution release that
// testdata/registry pins. testdata is the repository's testdata folder.
func Binary(testdata string, logf func(string, ...any)) (string, error) {
	set, version, err := pinned.Registry(testdata)
	if err != nil {
		return "", err
	}
	dir, err := set.Build(testdata, logf)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "registry")
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "", err
	}
	// go build names a package's module as the main one when the package
	// lies in a dependency of the wrapper module.
	for _, m := range append(info.Deps, &info.Main) {
		if m.Path == pinned.RegistryModule && m.Version == version {
			return path, nil
		}
	}
	return "", errors.New(path + " is not built from " + pinned.RegistryModule + " " + version)
}
