// Package layer writes the layers of the local cluster's test images
// (test/images/build, test/images/cnb): a tar of files in name order with
// times zeroed, so the same inputs give the same digest.
package layer

import (
	"archive/tar"
	"bytes"
	"sort"
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
