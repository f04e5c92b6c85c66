package cli

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
)

func TestVersionText(t *testing.T) {
	metadata := &chart.Metadata{Name: "torchwrap", Version: "0.1.0", AppVersion: "v1beta2"}
	settings := []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"}}

	// go install github.com/torchwrap/generator/cmd/generator@v0.1.0
	installed := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"}, Settings: settings}
	require.Equal(t, "generator v0.1.0\ngo        go1.26.8 linux/arm64\nchart     torchwrap 0.1.0, appVersion v1beta2\n", versionText(installed, metadata))

	// go build in a git checkout with uncommitted changes
	built := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.1-0.20261122150405-0123456789ab+dirty"},
		Settings: append(settings, debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef"},
			debug.BuildSetting{Key: "vcs.time", Value: "2026-11-22T15:04:05Z"}, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}
	require.Equal(t, `generator v0.1.1-0.20261122150405-0123456789ab+dirty
commit    0123456789abcdef, with uncommitted changes, committed 2026-11-22T15:04:05Z
go        go1.26.8 linux/arm64
chart     torchwrap 0.1.0, appVersion v1beta2
`, versionText(built, metadata))

	// go build without version control information (-buildvcs=false)
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: settings}
	require.Contains(t, versionText(bare, metadata), "generator (devel)\n")
}
