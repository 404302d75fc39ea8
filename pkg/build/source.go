// Package build builds an app's image from source in the cluster: it packs
// a folder, runs a build pod from the app's builder image with tug's agent
// (cmd/tug-build) in it, streams the source in over the API server and the
// build's log out, and returns the pushed image's digest. See
// docs/builders.md.
package build

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

	"tug.dev/tug/pkg/build/protocol"
	"tug.dev/tug/pkg/text"
	"tug.dev/tug/pkg/usage"
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
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, usage.Wrap(err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, usage.Errorf("--source %s: %w", dir, unwrapPath(err))
	}
	if !fi.IsDir() {
		return nil, usage.Errorf("--source %s is not a folder", dir)
	}
	src := &Source{Dir: abs}
	ig, name, err := readIgnore(abs)
	if err != nil {
		return nil, usage.Errorf("%s: %w", name, err)
	}
	src.Ignore = name
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, usage.Errorf("--source %s: %w", dir, unwrapPath(err))
	}
	defer root.Close()

	// What the agent would unpack is counted first, from the folder's
	// listing, so a tree over the limits is refused before a byte of it
	// is read.
	var paths []string
	var unpacked int64
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return usage.Errorf("cannot read %s: %w", p, unwrapPath(err))
		}
		rel, _ := filepath.Rel(abs, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" || ig.ignored(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		paths = append(paths, rel)
		if len(paths) > lim.Entries {
			return usage.Errorf("the source in %s has more than %d files, folders and links, the limit (docs/builders.md); leave build output and dependencies out with a .tugignore", dir, lim.Entries)
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return usage.Errorf("cannot read %s: %w", p, unwrapPath(err))
			}
			if unpacked += info.Size(); unpacked > lim.Unpacked {
				return usage.Errorf("the source in %s is over the %s limit unpacked (docs/builders.md); leave build output and data out with a .tugignore", dir, text.Size(lim.Unpacked))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, rel := range paths {
		p := filepath.Join(abs, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, usage.Errorf("cannot read %s: %w", p, unwrapPath(err))
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return nil, usage.Errorf("cannot read %s: %w", p, unwrapPath(err))
			}
			out, err := protocol.Escapes(slashTree{root}, rel)
			if err != nil {
				return nil, usage.Errorf("symlink %s: %w", rel, err)
			}
			if out {
				return nil, usage.Errorf("%s is a symlink to %s, which leads outside %s once its links are followed: the build would not see it; copy what it points at into the folder or add it to .tugignore", rel, link, dir)
			}
			link = filepath.ToSlash(link)
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			continue // sockets, devices: nothing a build reads
		}
		h.Name = rel
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return nil, usage.Errorf("cannot read %s: %w", p, unwrapPath(err))
			}
			// the size the header promised: a file that grew since is cut
			n, err := io.Copy(tw, io.LimitReader(f, h.Size))
			f.Close()
			if err != nil {
				return nil, usage.Errorf("cannot read %s: %w", p, unwrapPath(err))
			}
			src.Files++
			src.Size += n
		}
		if int64(buf.Len()) > lim.Compressed {
			return nil, tooBig(dir, lim.Compressed)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > lim.Compressed {
		return nil, tooBig(dir, lim.Compressed)
	}
	src.Data = buf.Bytes()
	return src, nil
}

func tooBig(dir string, limit int64) error {
	return usage.Errorf("the source in %s is over the %d MiB limit once compressed; leave build output and data out with a .tugignore", dir, limit>>20)
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
