// Package layer writes the layers of the local cluster's test images
// (test/images/build, test/images/cnb, test/images/pack): a tar of files in
// name order, or of a root filesystem's tree, with times zeroed, so the
// same inputs give the same digest; and the OCI image layouts holding them.
package layer

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// File is one entry of a layer.
type File struct {
	Name string // path inside the image, without a leading slash
	Mode int64
	Data []byte
	Link string // symlink target, when set
	Dir  bool
	UID  int // owner and group
}

var epoch = time.Unix(0, 0).UTC()

// Tar writes files as an uncompressed layer, sorting them in place.
func Tar(files []File) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX, Uid: f.UID, Gid: f.UID}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, f.Name+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DirTar writes the tree under root (a root filesystem) to w as a layer:
// entries in walk order (lexical), times zeroed, owners, modes and hard
// links kept. The folders the container runtime mounts over (dev, proc,
// sys) are written empty; device nodes, sockets and pipes are skipped.
func DirTar(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{} // (device, inode) -> first name
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := dirEntryHeader(path, filepath.ToSlash(rel), info, links)
		if err != nil || h == nil {
			return err
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() && emptied[h.Name] {
			return fs.SkipDir
		}
		if h.Typeflag == tar.TypeReg && h.Size > 0 {
			return copyFile(tw, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// emptied are the folders the runtime mounts over: kept, but empty.
var emptied = map[string]bool{"dev/": true, "proc/": true, "sys/": true}

// dirEntryHeader is the tar header of one entry, nil to skip it.
func dirEntryHeader(path, name string, info fs.FileInfo, links map[[2]uint64]string) (*tar.Header, error) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no owner information", path)
	}
	mode := int64(info.Mode().Perm())
	for bit, m := range map[fs.FileMode]int64{fs.ModeSetuid: 0o4000, fs.ModeSetgid: 0o2000, fs.ModeSticky: 0o1000} {
		if info.Mode()&bit != 0 {
			mode |= m
		}
	}
	h := &tar.Header{Name: name, Mode: mode, ModTime: epoch, Format: tar.FormatPAX, Uid: int(st.Uid), Gid: int(st.Gid)}
	switch {
	case info.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return nil, err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
	case info.Mode().IsRegular():
		key := [2]uint64{uint64(st.Dev), st.Ino}
		if first, seen := links[key]; seen && st.Nlink > 1 {
			h.Typeflag, h.Linkname = tar.TypeLink, first
			return h, nil
		}
		links[key] = name
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
	default:
		return nil, nil
	}
	return h, nil
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
