package workspace_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/workspace"
)

// folder makes a folder of files: path to content ("->target" makes a link).
func folder(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		full := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		if target, ok := strings.CutPrefix(content, "->"); ok {
			require.NoError(t, os.Symlink(target, full))
			continue
		}
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

// unpack reads an archive back: each entry's name to its content (a link's
// to "->target", a folder's to "/").
func unpack(t *testing.T, archive []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	entries := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		require.NoError(t, err)
		switch h.Typeflag {
		case tar.TypeDir:
			entries[h.Name] = "/"
		case tar.TypeSymlink:
			entries[h.Name] = "->" + h.Linkname
		default:
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			entries[h.Name] = string(data)
		}
	}
}

func TestPackLeavesOutWhatIgnoreFilesAndGitSay(t *testing.T) {
	root := folder(t, map[string]string{
		"train.py":              "import model\n",
		"model/__init__.py":     "",
		"model/net.py":          "NET = 1\n",
		".gitignore":            "*.log\ncheckpoints/\n# a comment\n\n",
		".torchwrapignore":      "data/raw/\n!keep.log\n",
		"run.log":               "noise",
		"keep.log":              "wanted",
		"checkpoints/step1.pt":  "weights",
		"data/raw/big.bin":      "raw",
		"data/small.csv":        "a,b\n",
		"model/.gitignore":      "scratch.py\n",
		"model/scratch.py":      "x",
		".git/config":           "[core]",
		"sub/.git":              "gitdir: ../.git/modules/sub",
		"sub/lib.py":            "LIB = 2\n",
		"model/link_to_net.py":  "->net.py",
		"model/link_to_data.py": "->../data/small.csv",
	})
	p, err := workspace.Pack(root)
	require.NoError(t, err)
	got := unpack(t, p.Archive)
	assert.Equal(t, map[string]string{
		"train.py": "import model\n", ".gitignore": "*.log\ncheckpoints/\n# a comment\n\n", ".torchwrapignore": "data/raw/\n!keep.log\n",
		"keep.log": "wanted", "data/": "/", "data/small.csv": "a,b\n",
		"model/": "/", "model/__init__.py": "", "model/net.py": "NET = 1\n", "model/.gitignore": "scratch.py\n",
		"model/link_to_net.py": "->net.py", "model/link_to_data.py": "->../data/small.csv",
		"sub/": "/", "sub/lib.py": "LIB = 2\n",
	}, got)
	assert.Equal(t, 11, p.Files, "files and links, without folders")
	assert.Empty(t, p.Secrets)
	assert.Equal(t, root, p.Folder)
}

func TestPackIsTheSameForTheSameFiles(t *testing.T) {
	files := map[string]string{"train.py": "print(1)\n", "lib/a.py": "A = 1\n"}
	a, err := workspace.Pack(folder(t, files))
	require.NoError(t, err)
	other := folder(t, files)
	require.NoError(t, os.Chtimes(filepath.Join(other, "train.py"), time0, time0))
	b, err := workspace.Pack(other)
	require.NoError(t, err)
	assert.Equal(t, a.Digest, b.Digest, "times and folders do not count")
	assert.Equal(t, a.Archive, b.Archive)

	files["train.py"] = "print(2)\n"
	c, err := workspace.Pack(folder(t, files))
	require.NoError(t, err)
	assert.NotEqual(t, a.Digest, c.Digest, "a changed file changes the digest")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, a.Digest)
}

func TestPackLeavesOutSecretsUnlessNamed(t *testing.T) {
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n"
	root := folder(t, map[string]string{
		"train.py":            "",
		".env":                "TOKEN=1",
		".env.local":          "TOKEN=2",
		".env.example":        "TOKEN=",
		"keys/id_ed25519":     "k",
		"keys/id_ed25519.pub": "ssh-ed25519 AAAA",
		"tls/server.pem":      "c",
		"deploy_key":          key,
		"notes.md":            "-----BEGIN CERTIFICATE-----\n",
	})
	p, err := workspace.Pack(root)
	require.NoError(t, err)
	assert.Equal(t, []string{".env", ".env.local", "deploy_key", "keys/id_ed25519", "tls/server.pem"}, p.Secrets)
	got := unpack(t, p.Archive)
	assert.Contains(t, got, ".env.example")
	assert.Contains(t, got, "keys/id_ed25519.pub")
	assert.Contains(t, got, "notes.md")
	assert.NotContains(t, got, ".env")

	require.NoError(t, os.WriteFile(filepath.Join(root, workspace.IgnoreFile), []byte("!.env\n"), 0o644))
	p, err = workspace.Pack(root)
	require.NoError(t, err)
	assert.NotContains(t, p.Secrets, ".env", "named with a ! line, it ships")
	assert.Equal(t, "TOKEN=1", unpack(t, p.Archive)[".env"])
}

func TestPackRefusesLinksOutside(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("x"), 0o644))
	root := folder(t, map[string]string{
		"train.py": "",
		"up.txt":   "->" + filepath.Join("..", filepath.Base(outside), "secret.txt"),
		"abs.txt":  "->" + filepath.Join(outside, "secret.txt"),
		"ok.txt":   "->train.py",
	})
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "via")))
	require.NoError(t, os.Symlink("via/secret.txt", filepath.Join(root, "chain.txt")))
	_, err := workspace.Pack(root)
	var links workspace.LinksOutside
	require.ErrorAs(t, err, &links)
	var paths []string
	for _, l := range links.Links {
		paths = append(paths, l.Path)
	}
	assert.Equal(t, []string{"abs.txt", "chain.txt", "up.txt", "via"}, paths)
	assert.Contains(t, err.Error(), "up.txt -> ../")
	assert.Contains(t, err.Error(), "nothing was sent")

	require.NoError(t, os.WriteFile(filepath.Join(root, workspace.IgnoreFile), []byte("up.txt\nabs.txt\nchain.txt\nvia\n"), 0o644))
	_, err = workspace.Pack(root)
	assert.NoError(t, err, "links left out are not refused")
}

func TestPackRefusesTooLargeNamingTheLargestFiles(t *testing.T) {
	root := folder(t, map[string]string{"train.py": "print(1)\n", "small.bin": "x"})
	noise := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "data.bin"), noise(workspace.Limit-workspace.PartSize), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "weights.pt"), noise(2*workspace.PartSize), 0o644))
	_, err := workspace.Pack(root)
	var large workspace.TooLarge
	require.ErrorAs(t, err, &large)
	assert.Equal(t, "data.bin", large.Largest[0].Path)
	assert.Equal(t, "weights.pt", large.Largest[1].Path)
	assert.Contains(t, err.Error(), "data.bin (7.0 MiB), weights.pt (2.0 MiB)")
	assert.Contains(t, err.Error(), "its files take 9.0 MiB and pack to more than 8.0 MiB, the most a workspace may be (8 ConfigMaps of 1023.0 KiB)")

	require.NoError(t, os.Remove(filepath.Join(root, "weights.pt")))
	p, err := workspace.Pack(root)
	require.NoError(t, err, "7 MiB of noise fits")
	parts := p.Split()
	assert.Len(t, parts, 8)
	assert.Equal(t, 8, p.Parts)
	assert.Equal(t, p.Archive, bytes.Join(parts, nil))
	for _, part := range parts {
		assert.LessOrEqual(t, len(part), workspace.PartSize)
	}
}

// Files too large to fit however they pack are refused without packing:
// a sparse file of 129 MiB, which packing would take seconds to read.
func TestPackRefusesHugeFilesUnread(t *testing.T) {
	root := folder(t, map[string]string{"train.py": "print(1)\n"})
	huge, err := os.Create(filepath.Join(root, "dataset.bin"))
	require.NoError(t, err)
	require.NoError(t, huge.Truncate(129<<20))
	require.NoError(t, huge.Close())
	_, err = workspace.Pack(root)
	var large workspace.TooLarge
	require.ErrorAs(t, err, &large)
	assert.Zero(t, large.Packed, "not packed")
	assert.Contains(t, err.Error(), "its files take 129.0 MiB, more than 128.0 MiB, which no packing brings down to 8.0 MiB")
	assert.Contains(t, err.Error(), "the largest files: dataset.bin (129.0 MiB), train.py (9 B)")
}

func TestPackRefusesWhatIsNotAFolder(t *testing.T) {
	root := folder(t, map[string]string{"train.py": ""})
	_, err := workspace.Pack(filepath.Join(root, "missing"))
	assert.ErrorContains(t, err, "does not exist")
	_, err = workspace.Pack(filepath.Join(root, "train.py"))
	assert.ErrorContains(t, err, "is a file, not a folder")
}

func TestConfigMapsCarryThePartsInOrder(t *testing.T) {
	p, err := workspace.Pack(folder(t, map[string]string{"train.py": "print(1)\n"}))
	require.NoError(t, err)
	cms := p.ConfigMaps("job", "team")
	require.Len(t, cms, 1)
	metadata := cms[0]["metadata"].(map[string]any)
	assert.Equal(t, "job-workspace-0", metadata["name"])
	assert.Equal(t, "team", metadata["namespace"])
	assert.Equal(t, map[string]any{workspace.JobLabel: "job"}, metadata["labels"])
	assert.Equal(t, true, cms[0]["immutable"])
	assert.Contains(t, cms[0]["binaryData"], "part-00")
	assert.Equal(t, []string{"job-workspace-0", "job-workspace-1"}, workspace.Names("job", 2))
}

var time0 = time.Unix(1, 0)
