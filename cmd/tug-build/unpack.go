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

	"tug.dev/tug/pkg/build/protocol"
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
	seen := map[string]byte{} // name -> tar type flag
	var links []string
	entries := 0
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return files, size, fmt.Errorf("reading the source: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := entryName(h.Name)
		if err != nil {
			return files, size, err
		}
		if name == "." {
			continue
		}
		if entries++; entries > lim.entries {
			return files, size, fmt.Errorf("the source has more than %d entries, the limit", lim.entries)
		}
		if _, dup := seen[name]; dup {
			return files, size, fmt.Errorf("the source has %s twice", name)
		}
		for p := path.Dir(name); p != "."; p = path.Dir(p) {
			switch seen[p] {
			case tar.TypeSymlink:
				return files, size, fmt.Errorf("%s is under the symlink %s: the archive would write through it", name, p)
			case 0, tar.TypeDir:
			default:
				return files, size, fmt.Errorf("%s is under %s, which is not a folder", name, p)
			}
		}
		seen[name] = h.Typeflag
		if parent := path.Dir(name); parent != "." {
			if err := root.MkdirAll(parent, 0o755); err != nil {
				return files, size, err
			}
		}
		perm := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, perm|0o700); err != nil {
				return files, size, err
			}
		case tar.TypeReg: // the reader turns old TypeRegA into TypeReg
			// O_EXCL: never through a link, never over something there
			f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm|0o600)
			if err != nil {
				return files, size, err
			}
			n, err := io.Copy(f, io.LimitReader(tr, lim.bytes-size+1))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			size += n
			if err != nil {
				return files, size, err
			}
			if size > lim.bytes {
				return files, size, fmt.Errorf("the source unpacks to more than %s, the limit", text.Size(lim.bytes))
			}
			files++
		case tar.TypeSymlink:
			if path.IsAbs(h.Linkname) {
				return files, size, fmt.Errorf("symlink %s -> %s leaves the source", name, h.Linkname)
			}
			if err := root.Symlink(h.Linkname, name); err != nil {
				return files, size, err
			}
			links = append(links, name)
		case tar.TypeLink:
			return files, size, fmt.Errorf("%s is a hard link; the source has none (tug packs links as symlinks)", name)
		default:
			// devices, fifos: nothing a build reads, and nothing to make
			delete(seen, name)
		}
	}
	// Links may point at entries that came after them: judge them on the
	// whole tree, following the links around them as the build would.
	for _, l := range links {
		out, err := protocol.Escapes(root, l)
		if err != nil {
			return files, size, fmt.Errorf("symlink %s: %w", l, err)
		}
		if out {
			target, _ := root.Readlink(l)
			return files, size, fmt.Errorf("symlink %s -> %s leaves the source once its links are followed", l, target)
		}
	}
	return files, size, nil
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
