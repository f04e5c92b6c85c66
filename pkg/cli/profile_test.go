package cli_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/testdata/cases"
)

// Each profile of testdata/profile/invalid is refused with exit code 1,
// nothing on standard output, and exactly the messages of its expected.txt:
// every problem, in the profile's own file and line.
func TestInvalidProfiles(t *testing.T) {
	for _, c := range cases.InvalidProfiles(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Chdir(c.Dir)
			args := []string{"profile", "validate", "profile.yaml"}
			if _, err := os.Stat("refines.yaml"); err == nil {
				args = append(args, "refines.yaml")
			}
			out, errOut, code := generator(t, nil, args...)
			require.Equal(t, cli.ExitInvalid, code, errOut)
			require.Empty(t, out)
			cases.Check(t, "expected.txt", []byte(errOut))
		})
	}
}
