package workspace_test

import (
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchwrap/generator/pkg/workspace"
)

// BenchmarkPack packs a typical project (2 MB in 200 files, in 10 folders:
// 190 of Python, 10 KB each, of lines that vary as code does, and 10 of
// data, 10 KB each, that do not compress; with a .gitignore) and a folder at
// the limit (random bytes, which do not compress, just under 8 ConfigMaps).
func BenchmarkPack(b *testing.B) {
	typical := b.TempDir()
	r := mathrand.New(mathrand.NewPCG(1, 2))
	names := []string{"model", "batch", "loss", "optimizer", "scheduler", "tokens", "logits", "target", "step", "epoch"}
	for i := range 190 {
		var code strings.Builder
		for code.Len() < 10_000 {
			fmt.Fprintf(&code, "    %s_%d = %s(%s, %d)  # %s\n", names[r.IntN(10)], r.IntN(100), names[r.IntN(10)], names[r.IntN(10)], r.IntN(10_000), names[r.IntN(10)])
		}
		write(b, filepath.Join(typical, fmt.Sprintf("pkg%d", i%10), fmt.Sprintf("module%d.py", i)), []byte(code.String()))
	}
	for i := range 10 {
		data := make([]byte, 10_000)
		_, _ = rand.Read(data)
		write(b, filepath.Join(typical, "data", fmt.Sprintf("sample%d.bin", i)), data)
	}
	write(b, filepath.Join(typical, ".gitignore"), []byte("__pycache__/\n*.pt\n"))

	full := b.TempDir()
	noise := make([]byte, workspace.Limit-64<<10)
	_, _ = rand.Read(noise)
	write(b, filepath.Join(full, "train.py"), []byte("print(1)\n"))
	write(b, filepath.Join(full, "data.bin"), noise)

	for name, dir := range map[string]string{"typical-200-files-2MB": typical, "at-the-limit": full} {
		b.Run(name, func(b *testing.B) {
			var p *workspace.Packed
			for b.Loop() {
				var err error
				if p, err = workspace.Pack(dir); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(p.Archive)), "packed-bytes")
			b.ReportMetric(float64(p.Parts), "configmaps")
		})
	}
}

func write(b *testing.B, path string, data []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}
