package registry

import (
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
	return set.BuildPinned(testdata, version, logf)
}
