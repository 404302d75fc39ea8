package layer

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Tag is one image of a layout: the name it is imported under and its
// config.
type Tag struct {
	Ref        string
	Env        []string
	Entrypoint []string
	Cmd        []string
	User       string // "" is root
	WorkingDir string // "" is /
	StopSignal string // "" is SIGTERM
	Labels     map[string]string
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    map[string]string `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// blob is a blob of the layout: in memory, or (the layer, which may be
// hundreds of megabytes) in a file.
type blob struct {
	data []byte
	file string
}

// WriteLayout writes one OCI image layout (oci-layout, index.json, blobs)
// as a tar at path, with one manifest per tag sharing the single layer
// held in layerFile (an uncompressed tar). It streams the layer, so a
// whole root filesystem never sits in memory.
func WriteLayout(path, layerFile string, tags []Tag) error {
	layerDesc, err := fileDescriptor(layerFile)
	if err != nil {
		return err
	}
	blobs := map[string]blob{layerDesc.Digest: {file: layerFile}}
	add := func(mediaType string, data []byte) descriptor {
		sum := sha256.Sum256(data)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = blob{data: data}
		return descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
	}
	var manifests []descriptor
	for _, t := range tags {
		config := add("application/vnd.oci.image.config.v1+json", configJSON(t, layerDesc.Digest))
		man, _ := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        config,
			"layers":        []descriptor{layerDesc},
		})
		d := add("application/vnd.oci.image.manifest.v1+json", man)
		d.Platform = map[string]string{"architecture": runtime.GOARCH, "os": "linux"}
		d.Annotations = map[string]string{
			"io.containerd.image.name":          t.Ref,
			"org.opencontainers.image.ref.name": t.Ref[strings.LastIndex(t.Ref, ":")+1:],
		}
		manifests = append(manifests, d)
	}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests})
	tmp := path + ".tmp"
	if err := writeLayoutTar(tmp, index, blobs); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// configJSON is an image config for tag t over the single layer diffID.
// Fields a tag leaves empty are left out, so images that set only Env and
// Cmd keep the digests they had before the others existed.
func configJSON(t Tag, diffID string) []byte {
	cfg := map[string]any{"Env": t.Env, "Cmd": t.Cmd, "WorkingDir": "/"}
	if t.WorkingDir != "" {
		cfg["WorkingDir"] = t.WorkingDir
	}
	if t.Entrypoint != nil {
		cfg["Entrypoint"] = t.Entrypoint
	}
	if t.User != "" {
		cfg["User"] = t.User
	}
	if t.StopSignal != "" {
		cfg["StopSignal"] = t.StopSignal
	}
	if len(t.Labels) > 0 {
		cfg["Labels"] = t.Labels
	}
	data, _ := json.Marshal(map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       cfg,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	return data
}

func fileDescriptor(path string) (descriptor, error) {
	f, err := os.Open(path)
	if err != nil {
		return descriptor{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return descriptor{}, err
	}
	return descriptor{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}

// writeLayoutTar writes the layout's entries in name order, times zeroed.
func writeLayoutTar(path string, index []byte, blobs map[string]blob) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX, Typeflag: tar.TypeDir})
	}
	if err := dir("blobs/"); err != nil {
		return err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return err
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := writeBlob(tw, "blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), blobs[d]); err != nil {
			return err
		}
	}
	if err := writeBlob(tw, "index.json", blob{data: index}); err != nil {
		return err
	}
	if err := writeBlob(tw, "oci-layout", blob{data: []byte(`{"imageLayoutVersion":"1.0.0"}`)}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return out.Close()
}

func writeBlob(tw *tar.Writer, name string, b blob) error {
	h := &tar.Header{Name: name, Mode: 0o644, ModTime: epoch, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(b.data))}
	if b.file == "" {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(b.data)
		return err
	}
	f, err := os.Open(b.file)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h.Size = st.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
