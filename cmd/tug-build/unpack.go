package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/text"
)

// limits of one unpack; protocol's in the agent, smaller in tests.
type limits struct {
	bytes   int64
	entries int
}

var defaultLimits = limits{bytes: protocol.MaxUnpackedBytes, entries: protocol.MaxEntries}

// unpack extracts a gzipped tar into dir through an os.Root, so nothing
// it writes can land outside dir whatever the archive says. It refuses
// (and stops at) an entry whose name is absolute or has "..", an entry
// under a symlink of the archive, a second entry of the same name, a hard
// link, a symlink that leaves dir once the links around it are followed,
// and more than lim's bytes or entries. Files get their permission bits,
// never setuid, setgid or sticky.
func unpack(r io.Reader, dir string, lim limits) (files int, size int64, err error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the source: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, 0, err
	}
	defer root.Close()
	u := &unpacker{root: root, lim: lim, seen: map[string]byte{}}
	err = u.extract(tar.NewReader(zr))
	if err == nil {
		err = u.checkLinks()
	}
	return u.files, u.size, err
}

// unpacker is one archive being unpacked: the steps of unpack share it.
type unpacker struct {
	root    *os.Root
	lim     limits
	seen    map[string]byte // name -> tar type flag
	links   []string        // the symlinks made, judged once the tree is whole
	entries int
	files   int
	size    int64
}

// extract writes each entry of the archive, stopping at the first it
// refuses.
func (u *unpacker) extract(tr *tar.Reader) error {
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the source: %w", err)
		}
		if err := u.entry(h, tr); err != nil {
			return err
		}
	}
}

// entry writes one entry, body being its contents, once its name is
// allowed; a global header and the folder itself write nothing.
func (u *unpacker) entry(h *tar.Header, body io.Reader) error {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	name, err := entryName(h.Name)
	if err != nil {
		return err
	}
	if name == "." {
		return nil
	}
	if err := u.admit(name); err != nil {
		return err
	}
	u.seen[name] = h.Typeflag
	if parent := path.Dir(name); parent != "." {
		if err := u.root.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	return u.write(name, h, body)
}

// admit counts the entry and refuses a name seen before or under
// anything but a folder: through an earlier symlink of the archive, a
// write would land where the link points.
func (u *unpacker) admit(name string) error {
	if u.entries++; u.entries > u.lim.entries {
		return fmt.Errorf("the source has more than %d entries, the limit", u.lim.entries)
	}
	if _, dup := u.seen[name]; dup {
		return fmt.Errorf("the source has %s twice", name)
	}
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		switch u.seen[p] {
		case tar.TypeSymlink:
			return fmt.Errorf("%s is under the symlink %s: the archive would write through it", name, p)
		case 0, tar.TypeDir:
		default:
			return fmt.Errorf("%s is under %s, which is not a folder", name, p)
		}
	}
	return nil
}

// write makes the entry by its type, with its permission bits only.
func (u *unpacker) write(name string, h *tar.Header, body io.Reader) error {
	perm := fs.FileMode(h.Mode) & fs.ModePerm
	switch h.Typeflag {
	case tar.TypeDir:
		return u.root.MkdirAll(name, perm|0o700)
	case tar.TypeReg: // the reader turns old TypeRegA into TypeReg
		return u.writeFile(name, perm, body)
	case tar.TypeSymlink:
		return u.symlink(name, h.Linkname)
	case tar.TypeLink:
		return fmt.Errorf("%s is a hard link; the source has none (tug packs links as symlinks)", name)
	default:
		// devices, fifos: nothing a build reads, and nothing to make
		delete(u.seen, name)
		return nil
	}
}

// writeFile writes a file's contents, reading one byte past the byte
// limit at most, so a bomb stops there.
func (u *unpacker) writeFile(name string, perm fs.FileMode, body io.Reader) error {
	// O_EXCL: never through a link, never over something there
	f, err := u.root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm|0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(body, u.lim.bytes-u.size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	u.size += n
	if err != nil {
		return err
	}
	if u.size > u.lim.bytes {
		return fmt.Errorf("the source unpacks to more than %s, the limit", text.Size(u.lim.bytes))
	}
	u.files++
	return nil
}

// symlink makes a link; whether it leaves the folder once the links
// around it are followed is judged by checkLinks, at the end.
func (u *unpacker) symlink(name, target string) error {
	if path.IsAbs(target) {
		return fmt.Errorf("symlink %s -> %s leaves the source", name, target)
	}
	if err := u.root.Symlink(target, name); err != nil {
		return err
	}
	u.links = append(u.links, name)
	return nil
}

// checkLinks: links may point at entries that came after them, so they
// are judged on the whole tree, following the links around them as the
// build would.
func (u *unpacker) checkLinks() error {
	for _, l := range u.links {
		out, err := protocol.Escapes(u.root, l)
		if err != nil {
			return fmt.Errorf("symlink %s: %w", l, err)
		}
		if out {
			target, _ := u.root.Readlink(l)
			return fmt.Errorf("symlink %s -> %s leaves the source once its links are followed", l, target)
		}
	}
	return nil
}

// entryName is an archive name as a clean relative path, or an error when
// it is absolute or goes up.
func entryName(n string) (string, error) {
	if n == "" || strings.ContainsRune(n, 0) {
		return "", fmt.Errorf("the source has an entry with a bad name %q", n)
	}
	if strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("the source has an absolute path %s", n)
	}
	for _, c := range strings.Split(n, "/") {
		if c == ".." {
			return "", fmt.Errorf("the source has a path that goes up, %s", n)
		}
	}
	return path.Clean(n), nil
}
