// Package build builds an app's image from source in the cluster: it packs
// a folder, runs a build pod from the app's builder image with tug's agent
// (cmd/tug-build) in it, streams the source in over the API server and the
// build's log out, and returns the pushed image's digest. See
// docs/builders.md.
package imagebuild

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/text"
)

// DefaultSourceLimit is the largest compressed source tug uploads (see
// docs/builders.md): larger trees usually hold build output or data that a
// .tugignore should leave out.
const DefaultSourceLimit = 64 << 20

// Source is a packed source tree.
type Source struct {
	Dir    string
	Data   []byte // gzipped tar
	Files  int
	Size   int64  // bytes of the files, before compression
	Ignore string // the ignore file used, "" for none
}

// Limits bound what Pack packs: the compressed archive, and what the
// agent unpacks (protocol's limits).
type Limits struct {
	Compressed int64
	Unpacked   int64
	Entries    int
}

// Pack makes a gzipped tar of dir, leaving out .git/ and what .tugignore
// (else .dockerignore) names. It refuses, as usage errors and before
// anything else happens, a tree whose archive is over limit (compressed),
// a tree over the agent's limits unpacked (protocol.MaxUnpackedBytes,
// protocol.MaxEntries), an unreadable file and a symlink that leaves dir
// once the links it goes through are followed.
func Pack(dir string, limit int64) (*Source, error) {
	return pack(dir, Limits{Compressed: limit, Unpacked: protocol.MaxUnpackedBytes, Entries: protocol.MaxEntries})
}

func pack(dir string, lim Limits) (*Source, error) {
	if lim.Compressed <= 0 {
		lim.Compressed = DefaultSourceLimit
	}
	p, err := openSource(dir)
	if err != nil {
		return nil, err
	}
	defer p.root.Close()
	paths, err := p.list(lim)
	if err != nil {
		return nil, err
	}
	if err := p.archive(paths, lim.Compressed); err != nil {
		return nil, err
	}
	return p.src, nil
}

// packer is one folder being packed: the steps of pack share it.
type packer struct {
	dir  string // as the user named it, for messages
	abs  string
	ig   ignore
	root *os.Root // the folder, for judging where its links lead
	src  *Source
}

// openSource checks that dir is a folder and reads its ignore file. The
// caller closes the packer's root.
func openSource(dir string) (*packer, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, inputerr.Wrap(err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, inputerr.Errorf("--source %s: %w", dir, unwrapPath(err))
	}
	if !fi.IsDir() {
		return nil, inputerr.Errorf("--source %s is not a folder", dir)
	}
	ig, name, err := readIgnore(abs)
	if err != nil {
		return nil, inputerr.Errorf("%s: %w", name, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, inputerr.Errorf("--source %s: %w", dir, unwrapPath(err))
	}
	return &packer{dir: dir, abs: abs, ig: ig, root: root, src: &Source{Dir: abs, Ignore: name}}, nil
}

// list is what gets packed, as slash-separated paths in order. What the
// agent would unpack is counted here, from the folder's listing, so a
// tree over the limits is refused before a byte of it is read.
func (p *packer) list(lim Limits) ([]string, error) {
	var paths []string
	var unpacked int64
	err := filepath.WalkDir(p.abs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return inputerr.Errorf("cannot read %s: %w", path, unwrapPath(err))
		}
		rel, _ := filepath.Rel(p.abs, path)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" || p.ig.ignored(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		paths = append(paths, rel)
		if len(paths) > lim.Entries {
			return inputerr.Errorf("the source in %s has more than %d files, folders and links, the limit (docs/builders.md); leave build output and dependencies out with a .tugignore", p.dir, lim.Entries)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return inputerr.Errorf("cannot read %s: %w", path, unwrapPath(err))
		}
		if unpacked += info.Size(); unpacked > lim.Unpacked {
			return inputerr.Errorf("the source in %s is over the %s limit unpacked (docs/builders.md); leave build output and data out with a .tugignore", p.dir, text.Size(lim.Unpacked))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}

// archive writes paths as a gzipped tar into the Source, stopping as soon
// as the archive is over limit rather than compressing the rest.
func (p *packer) archive(paths []string, limit int64) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, rel := range paths {
		if err := p.add(tw, rel); err != nil {
			return err
		}
		if int64(buf.Len()) > limit {
			return tooBig(p.dir, limit)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if int64(buf.Len()) > limit {
		return tooBig(p.dir, limit)
	}
	p.src.Data = buf.Bytes()
	return nil
}

// add writes one entry: a folder, a file or a symlink that stays inside
// the folder, owned by root so the tree unpacks the same for anyone.
// Sockets and devices are left out: nothing a build reads.
func (p *packer) add(tw *tar.Writer, rel string) error {
	path := filepath.Join(p.abs, filepath.FromSlash(rel))
	fi, err := os.Lstat(path)
	if err != nil {
		return inputerr.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		if link, err = p.linkInside(rel, path); err != nil {
			return err
		}
	}
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return nil
	}
	h.Name = rel
	if fi.IsDir() {
		h.Name += "/"
	}
	h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
	h.Format = tar.FormatPAX
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	return p.copyFile(tw, path, h.Size)
}

// linkInside is the target of the symlink rel, with slashes, or a usage
// error when following it (and the links it goes through) leaves the
// folder: the build would not see what it points at.
func (p *packer) linkInside(rel, path string) (string, error) {
	link, err := os.Readlink(path)
	if err != nil {
		return "", inputerr.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	out, err := protocol.Escapes(slashTree{p.root}, rel)
	if err != nil {
		return "", inputerr.Errorf("symlink %s: %w", rel, err)
	}
	if out {
		return "", inputerr.Errorf("%s is a symlink to %s, which leads outside %s once its links are followed: the build would not see it; copy what it points at into the folder or add it to .tugignore", rel, link, p.dir)
	}
	return filepath.ToSlash(link), nil
}

// copyFile writes the file's contents after its header and counts it.
func (p *packer) copyFile(tw *tar.Writer, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return inputerr.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	// the size the header promised: a file that grew since is cut
	n, err := io.Copy(tw, io.LimitReader(f, size))
	f.Close()
	if err != nil {
		return inputerr.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	p.src.Files++
	p.src.Size += n
	return nil
}

func tooBig(dir string, limit int64) error {
	return inputerr.Errorf("the source in %s is over the %d MiB limit once compressed; leave build output and data out with a .tugignore", dir, limit>>20)
}

// slashTree is the source folder as protocol.Escapes reads it: names
// and link targets with slashes, absolute targets (a Windows drive too)
// starting with one.
type slashTree struct{ r *os.Root }

func (t slashTree) Lstat(name string) (fs.FileInfo, error) {
	return t.r.Lstat(filepath.FromSlash(name))
}

func (t slashTree) Readlink(name string) (string, error) {
	l, err := t.r.Readlink(filepath.FromSlash(name))
	if err != nil {
		return "", err
	}
	if filepath.IsAbs(l) || filepath.VolumeName(l) != "" {
		return "/" + filepath.ToSlash(l), nil
	}
	return filepath.ToSlash(l), nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ignore holds .dockerignore-style patterns: one per line, # comments,
// ! re-includes, a pattern names a path and everything under it; * and ?
// do not cross /, ** does.
type ignore struct {
	rules []rule
}

type rule struct {
	pattern string
	negate  bool
}

func readIgnore(dir string) (ignore, string, error) {
	for _, name := range []string{".tugignore", ".dockerignore"} {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return ignore{}, name, unwrapPath(err)
		}
		defer f.Close()
		ig, err := parseIgnore(f)
		return ig, name, err
	}
	return ignore{}, "", nil
}

func parseIgnore(r io.Reader) (ignore, error) {
	var ig ignore
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		ru := rule{}
		if strings.HasPrefix(l, "!") {
			ru.negate, l = true, strings.TrimSpace(l[1:])
		}
		l = strings.Trim(path.Clean("/"+l), "/")
		if l == "" {
			continue
		}
		if _, err := path.Match(strings.ReplaceAll(l, "**", "*"), ""); err != nil {
			return ig, fmt.Errorf("bad pattern %q: %w", l, err)
		}
		ru.pattern = l
		ig.rules = append(ig.rules, ru)
	}
	return ig, sc.Err()
}

// ignored: the last rule matching rel or one of its parents wins.
func (ig ignore) ignored(rel string) bool {
	out := false
	for _, r := range ig.rules {
		if matchPath(r.pattern, rel) {
			out = !r.negate
		}
	}
	return out
}

// matchPath matches pattern against p or any of p's parents.
func matchPath(pattern, p string) bool {
	for q := p; q != "." && q != ""; q = path.Dir(q) {
		if globMatch(strings.Split(pattern, "/"), strings.Split(q, "/")) {
			return true
		}
	}
	return false
}

func globMatch(pat, parts []string) bool {
	if len(pat) == 0 {
		return len(parts) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(parts); i++ {
			if globMatch(pat[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], parts[0]); !ok {
		return false
	}
	return globMatch(pat[1:], parts[1:])
}
