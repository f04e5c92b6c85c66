// Package workspace packs a folder to be shipped with a job: the files that
// .gitignore and .torchwrapignore leave in, without what looks like a secret
// unless an ignore file names it, as one gzipped tar that is the same for the
// same files. The archive travels in ConfigMaps of at most PartSize bytes,
// which the job's pods unpack into their working folder.
package workspace

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// IgnoreFile is the workspace's own ignore file, read after .gitignore in
// every folder: its lines win over .gitignore's, and a ! line of it ships a
// file that looks like a secret.
const IgnoreFile = ".torchwrapignore"

// PartSize is the most archive bytes a ConfigMap holds: the API server
// refuses a ConfigMap whose data and keys pass 1 MiB, and the key takes a
// few bytes.
const PartSize = 1<<20 - 1<<10

// MaxParts is the most ConfigMaps a workspace takes; Limit is so the most
// bytes its archive may have.
const (
	MaxParts = 8
	Limit    = MaxParts * PartSize
)

// scanLimit is the size of the files past which a folder is refused
// without packing it: 16 times Limit, so that even text that compresses
// well (to a tenth) would not fit.
const scanLimit = 128 << 20

// Packed is a folder packed.
type Packed struct {
	// Folder is the folder's absolute path.
	Folder string
	// Files is how many files (and links) the archive holds; Bytes is
	// their size, unpacked.
	Files int
	Bytes int64
	// Archive is the gzipped tar, and Digest its SHA-256 ("sha256:HEX");
	// Parts, how many ConfigMaps carry it (Split). A workspace read back
	// from a job (import) has no Archive.
	Archive []byte
	Digest  string
	Parts   int
	// Secrets are the files left out because they look like secrets, by
	// their paths in the folder.
	Secrets []string
}

// File is a file of the folder to pack: its path in the folder (with /),
// its size, and for a link, where it points.
type File struct {
	Path string
	Size int64
	Mode fs.FileMode
	Link string
}

// TooLarge refuses a folder whose archive would pass Limit.
type TooLarge struct {
	Folder string
	// Bytes is the size of its files; Packed, the archive's size when
	// packing stopped, 0 when the files were too large to start.
	Bytes, Packed int64
	// Largest are its largest files, the largest first.
	Largest []File
}

func (e TooLarge) Error() string {
	largest := make([]string, len(e.Largest))
	for i, f := range e.Largest {
		largest[i] = fmt.Sprintf("%s (%s)", f.Path, Size(f.Size))
	}
	why := fmt.Sprintf("its files take %s and pack to more than %s", Size(e.Bytes), Size(Limit))
	if e.Packed == 0 {
		why = fmt.Sprintf("its files take %s, more than %s, which no packing brings down to %s", Size(e.Bytes), Size(scanLimit), Size(Limit))
	}
	return fmt.Sprintf("the workspace %s is too large to ship with the job: %s, the most a workspace may be (%d ConfigMaps of %s); "+
		"the largest files: %s. Leave them out with a line each in %s (or .gitignore), put data on a volume (volumes) or in the image, "+
		"or download it in setupCommands; nothing was sent",
		e.Folder, why, MaxParts, Size(PartSize), strings.Join(largest, ", "), IgnoreFile)
}

// NotAFolder refuses a workspace that names no folder.
type NotAFolder struct{ message string }

func (e NotAFolder) Error() string { return e.message }

// LinksOutside refuses a folder with symbolic links that point out of it:
// what they point to would not be in the pods.
type LinksOutside struct {
	Folder string
	Links  []File
}

func (e LinksOutside) Error() string {
	links := make([]string, len(e.Links))
	for i, f := range e.Links {
		links[i] = fmt.Sprintf("%s -> %s", f.Path, f.Link)
	}
	return fmt.Sprintf("the workspace %s has symbolic links that point outside it, which the pods would not have: %s; "+
		"copy what they point to into the folder, make them relative links inside it, or leave them out with a line each in %s; nothing was sent",
		e.Folder, strings.Join(links, ", "), IgnoreFile)
}

// Pack packs a folder. It refuses a folder that is not one, has links that
// point outside it, or whose archive would pass Limit (TooLarge).
func Pack(folder string) (*Packed, error) {
	abs, err := filepath.Abs(folder)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, NotAFolder{fmt.Sprintf("the workspace %s does not exist; give the folder to ship with the job", folder)}
	case err != nil:
		return nil, fmt.Errorf("the workspace %s cannot be read: %w", folder, err)
	case !info.IsDir():
		return nil, NotAFolder{fmt.Sprintf("the workspace %s is a file, not a folder; give the folder that holds it", folder)}
	}
	files, secrets, err := scan(abs)
	if err != nil {
		return nil, err
	}
	p := &Packed{Folder: abs, Files: len(files), Secrets: secrets}
	for _, f := range files {
		p.Bytes += f.Size
	}
	if p.Bytes > scanLimit {
		return nil, TooLarge{Folder: abs, Bytes: p.Bytes, Largest: largest(files)}
	}
	if p.Archive, err = archive(abs, files); errors.Is(err, errFull) {
		return nil, TooLarge{Folder: abs, Bytes: p.Bytes, Packed: Limit, Largest: largest(files)}
	} else if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(p.Archive)
	p.Digest = "sha256:" + hex.EncodeToString(sum[:])
	p.Parts = len(p.Split())
	return p, nil
}

// Split is the archive in pieces of at most PartSize bytes, in order.
func (p *Packed) Split() [][]byte {
	var parts [][]byte
	for rest := p.Archive; len(rest) > 0; {
		n := min(len(rest), PartSize)
		parts = append(parts, rest[:n])
		rest = rest[n:]
	}
	return parts
}

// scan lists the files to pack, in the order of their paths, and the paths
// of those left out as secrets. A folder a pattern leaves out is not read.
func scan(root string) (files []File, secrets []string, err error) {
	var patterns []rule
	var outside []File
	err = filepath.WalkDir(root, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("the workspace cannot be read: %w", err)
		}
		rel, _ := filepath.Rel(root, full)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			patterns, err = readRules(full, nil)
			return err
		}
		parts := strings.Split(rel, "/")
		if d.Name() == ".git" {
			return skip(d)
		}
		decided := decide(patterns, parts, d.IsDir())
		if decided.ignored {
			return skip(d)
		}
		if d.IsDir() {
			more, err := readRules(full, parts)
			patterns = append(patterns, more...)
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := File{Path: rel, Size: info.Size(), Mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if f.Link, err = os.Readlink(full); err != nil {
				return err
			}
			f.Size = 0
			if !inside(root, full, f.Link) {
				outside = append(outside, f)
				return nil
			}
		case !info.Mode().IsRegular():
			return nil // a socket or a device: nothing a program reads as code
		case !decided.named && secret(full, d.Name(), info.Size()):
			secrets = append(secrets, rel)
			return nil
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(outside) > 0 {
		return nil, nil, LinksOutside{Folder: root, Links: outside}
	}
	return files, secrets, nil
}

// skip leaves out an entry: a folder with all it holds.
func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}

// rule is a line of an ignore file, and whether it is of IgnoreFile.
type rule struct {
	gitignore.Pattern
	own bool
}

// readRules reads the ignore files of a folder (its path in the root as
// parts): .gitignore, then IgnoreFile.
func readRules(dir string, parts []string) ([]rule, error) {
	var rules []rule
	for _, name := range []string{".gitignore", IgnoreFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("the workspace's ignore file cannot be read: %w", err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSuffix(line, "\r")
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
				continue
			}
			rules = append(rules, rule{gitignore.ParsePattern(line, parts), name == IgnoreFile})
		}
	}
	return rules, nil
}

// decision is what the rules say of a path: left out, or named by a ! line
// of IgnoreFile.
type decision struct{ ignored, named bool }

// decide applies the rules as git does: the last that matches decides.
func decide(rules []rule, parts []string, dir bool) decision {
	for _, r := range slices.Backward(rules) {
		switch r.Match(parts, dir) {
		case gitignore.Exclude:
			return decision{ignored: true}
		case gitignore.Include:
			return decision{named: r.own}
		}
	}
	return decision{}
}

// inside tells whether a link at full, pointing to target, stays in root:
// a relative link whose target, and what that target resolves to, is in
// the folder. An absolute link would point elsewhere in the pods.
func inside(root, full, target string) bool {
	if filepath.IsAbs(target) {
		return false
	}
	within := func(root, p string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	if !within(root, filepath.Join(filepath.Dir(full), target)) {
		return false
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	resolved, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) {
		return true // a broken link inside: shipped as it is
	}
	return err == nil && within(realRoot, resolved)
}

// secretNames are the names of files that hold secrets by convention;
// secretSuffixes, the endings of key and certificate stores.
var (
	secretNames    = []string{".env", ".netrc", ".pypirc", ".git-credentials", ".npmrc", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials.json", "service-account.json"}
	secretSuffixes = []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"}
	envTemplates   = []string{".example", ".sample", ".template", ".dist"}
)

// secret tells whether a file looks like a secret: by its name (.env and
// .env.local, but not .env.example; ssh keys; key stores), or by its first
// line, a PEM private key's.
func secret(full, name string, size int64) bool {
	lower := strings.ToLower(name)
	if slices.Contains(secretNames, lower) {
		return true
	}
	if strings.HasPrefix(lower, ".env.") && !slices.ContainsFunc(envTemplates, func(s string) bool { return strings.HasSuffix(lower, s) }) {
		return true
	}
	if slices.ContainsFunc(secretSuffixes, func(s string) bool { return strings.HasSuffix(lower, s) }) {
		return true
	}
	if size < int64(len(pemStart)) {
		return false
	}
	f, err := os.Open(full)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 128)
	n, _ := io.ReadFull(f, head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	return bytes.HasPrefix(line, []byte(pemStart)) && bytes.Contains(line, []byte("PRIVATE KEY-----"))
}

const pemStart = "-----BEGIN "

// errFull stops packing when the archive passes Limit.
var errFull = errors.New("the workspace passed its limit")

// limited is a buffer that refuses to grow past Limit.
type limited struct{ bytes.Buffer }

func (l *limited) Write(p []byte) (int, error) {
	if l.Len()+len(p) > Limit {
		return 0, errFull
	}
	return l.Buffer.Write(p)
}

// archive packs the files into a gzipped tar that depends on their paths,
// contents, links and whether they are executable only: no owner, no time.
// gzip's fastest level packs a typical project four times faster than its
// default, into an archive a half larger (BenchmarkPack; docs/design.md).
func archive(root string, files []File) ([]byte, error) {
	var out limited
	zw, err := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	for _, f := range files {
		if err := writeDirs(tw, dirs, path.Dir(f.Path)); err != nil {
			return nil, err
		}
		if err := writeFile(tw, root, f); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeDirs writes the folders of a path that are not written yet, the
// highest first.
func writeDirs(tw *tar.Writer, written map[string]bool, dir string) error {
	if dir == "." || written[dir] {
		return nil
	}
	if err := writeDirs(tw, written, path.Dir(dir)); err != nil {
		return err
	}
	written[dir] = true
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755})
}

// writeFile writes a file or a link.
func writeFile(tw *tar.Writer, root string, f File) error {
	if f.Link != "" {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: f.Path, Linkname: filepath.ToSlash(f.Link), Mode: 0o777})
	}
	mode := int64(0o644)
	if f.Mode&0o111 != 0 {
		mode = 0o755
	}
	in, err := os.Open(filepath.Join(root, filepath.FromSlash(f.Path)))
	if err != nil {
		return err
	}
	defer in.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Size: f.Size, Mode: mode}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, in, f.Size); err != nil {
		return fmt.Errorf("the workspace's file %s changed while it was packed: %w", f.Path, err)
	}
	return nil
}

// Names are the names of the ConfigMaps of a job's workspace of n parts.
func Names(jobName string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-workspace-%d", jobName, i)
	}
	return names
}

// ConfigMaps are the ConfigMaps that carry the workspace of a job (its
// name, and namespace: "" for the one a command line gives): immutable,
// each with its part of the archive under the key part-NN (the pods read
// them in that order), labeled with the job's name and annotated with the
// workspace's digest.
func (p *Packed) ConfigMaps(jobName, namespace string) []map[string]any {
	parts := p.Split()
	names := Names(jobName, len(parts))
	objects := make([]map[string]any, len(parts))
	for i, part := range parts {
		metadata := map[string]any{
			"name":        names[i],
			"labels":      map[string]any{JobLabel: jobName},
			"annotations": map[string]any{DigestAnnotation: p.Digest},
		}
		if namespace != "" {
			metadata["namespace"] = namespace
		}
		objects[i] = map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "immutable": true,
			"binaryData": map[string]any{fmt.Sprintf("part-%02d", i): base64.StdEncoding.EncodeToString(part)},
		}
	}
	return objects
}

// JobLabel labels a workspace's ConfigMaps with the name of their job;
// DigestAnnotation gives the workspace's digest, on them and on the job,
// whose annotations DigestAnnotation-files, -bytes, -folder and -parts
// (the chart's torchwrap.manifest) say the rest.
const (
	JobLabel         = "torchwrap.dev/workspace-of"
	DigestAnnotation = "torchwrap.dev/workspace"
)

// Read reads the workspace a job ships from its annotations, without its
// archive; nil when it ships none.
func Read(annotations map[string]string) *Packed {
	digest := annotations[DigestAnnotation]
	if digest == "" {
		return nil
	}
	p := &Packed{Digest: digest, Folder: annotations[DigestAnnotation+"-folder"]}
	p.Files, _ = strconv.Atoi(annotations[DigestAnnotation+"-files"])
	p.Bytes, _ = strconv.ParseInt(annotations[DigestAnnotation+"-bytes"], 10, 64)
	p.Parts, _ = strconv.Atoi(annotations[DigestAnnotation+"-parts"])
	return p
}

// Short is the digest as people read it: sha256: and 12 hex digits, as the
// launch script says it too (the chart's torchwrap.setupScript).
func (p *Packed) Short() string { return p.Digest[:min(len(p.Digest), 19)] }

// Line says a workspace in a line: its digest, short, its files and size,
// and the folder it was packed from.
func (p *Packed) Line() string {
	return fmt.Sprintf("%s (%d files, %s) from %s", p.Short(), p.Files, Size(p.Bytes), p.Folder)
}

// largest are the five largest files, the largest first.
func largest(files []File) []File {
	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b File) int { return cmp.Compare(b.Size, a.Size) })
	return sorted[:min(5, len(sorted))]
}

// Size says a number of bytes for people: 512 B, 34.5 KiB, 2.0 MiB.
func Size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
