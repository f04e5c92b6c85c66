package settings_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/settings"
)

// endless is a standard input that never ends, and counts what is read of it.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "# padding\n"[(e.read+i)%10]
	}
	e.read += len(p)
	return len(p), nil
}

// An endless input is read up to the cap and refused: memory stays bounded
// whatever arrives.
func TestEndlessInputIsReadOnlyUpToTheCap(t *testing.T) {
	in := &endless{}
	_, err := settings.Load(settings.Options{Files: []string{"-"}, Stdin: in})
	require.EqualError(t, err, "<stdin>: the file is larger than 1 MiB, and settings files are a few KiB of YAML; is this the right file?")
	require.Equal(t, settings.MaxFileSize+1, in.read, "reads one byte past the cap, to know it is passed, and no more")
}

// A huge file is refused without being read whole.
func TestHugeFileIsRefusedUnread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(8<<30)) // 8 GiB, sparse: no disk used
	require.NoError(t, f.Close())
	_, err = settings.Load(settings.Options{Files: []string{path}})
	require.ErrorContains(t, err, "the file is larger than 1 MiB")
}

// A file just at the cap is still read.
func TestFileAtTheCapIsRead(t *testing.T) {
	head := "jobName: my-job\ncontainerImage: busybox\n"
	path := filepath.Join(t.TempDir(), "settings.yaml")
	require.NoError(t, os.WriteFile(path, []byte(head+"#"+strings.Repeat("x", settings.MaxFileSize-len(head)-2)+"\n"), 0o644))
	in, err := settings.Load(settings.Options{Files: []string{path}})
	require.NoError(t, err)
	require.Equal(t, "my-job", in.Values["jobName"])
}
