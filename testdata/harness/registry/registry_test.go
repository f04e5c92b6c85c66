package registry_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/testdata/cases"
	"github.com/torchwrap/generator/testdata/harness/registry"
)

// A started registry serves HTTPS for 127.0.0.1 under its own authority,
// and asks for credentials.
func TestStart(t *testing.T) {
	r := registry.Start(t, cases.Path(t, "testdata"))
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, r.Host)
	require.FileExists(t, r.CAFile)
	require.NotEmpty(t, r.User)
	require.NotEmpty(t, r.Password)
	status, err := r.Get("/v2/_catalog")
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, status)
}
