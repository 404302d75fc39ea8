// Command registry is the local cluster's image registry: go-containerregistry's
// registry behind a small main, blobs on disk, manifests in memory and
// journalled to disk so a restart keeps every tag and digest. It listens on
// the host-only bridge address only (cluster.sh passes it), plain HTTP: the
// nodes' containerd is told so by a hosts.toml, pods reach it over the bridge.
//
//	registry serve -addr 10.200.0.1:15000 -dir DIR
//	registry push -registry 10.200.0.1:15000 TAR...
//
// push copies every image of OCI image-layout tars (test/images/build's
// output) into the registry under its io.containerd.image.name with the host
// replaced, keeping its digest, and skips those already there.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: registry serve -addr HOST:PORT -dir DIR | registry push -registry HOST:PORT TAR...")
	os.Exit(2)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "", "HOST:PORT to listen on (a host-only address, never 0.0.0.0)")
	dir := fs.String("dir", "", "folder for blobs and the manifest journal")
	_ = fs.Parse(args)
	if *addr == "" || *dir == "" {
		usage()
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		return fmt.Errorf("-addr %s: listen on one IP address, not on every interface", *addr)
	}
	if err := os.MkdirAll(filepath.Join(*dir, "blobs"), 0o755); err != nil {
		return err
	}
	logger := log.New(os.Stderr, "", log.LstdFlags)
	h := registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(filepath.Join(*dir, "blobs"))), registry.Logger(logger))
	j := &journal{path: filepath.Join(*dir, "manifests.jsonl"), next: h}
	n, err := j.replay()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger.Printf("serving on http://%s (%d manifests from %s)", *addr, n, j.path)
	return http.Serve(ln, j)
}

// journal records every manifest the registry accepts and replays them at
// start: the registry package keeps manifests in memory only.
type journal struct {
	path string
	next http.Handler
	mu   sync.Mutex
}

type entry struct {
	Path        string `json:"path"`
	ContentType string `json:"contentType"`
	Body        []byte `json:"body"`
}

var manifestPath = regexp.MustCompile(`^/v2/.+/manifests/[^/]+$`)

func (j *journal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut || !manifestPath.MatchString(r.URL.Path) {
		j.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	j.next.ServeHTTP(rec, r)
	if rec.Code/100 == 2 {
		if err := j.append(entry{Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Body: body}); err != nil {
			log.Printf("journal: %v", err)
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (j *journal) append(e entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := os.OpenFile(j.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	line, _ := json.Marshal(e)
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (j *journal) replay() (int, error) {
	f, err := os.Open(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		var e entry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a line cut short by a crash
		}
		req := httptest.NewRequest(http.MethodPut, e.Path, bytes.NewReader(e.Body))
		req.Header.Set("Content-Type", e.ContentType)
		rec := httptest.NewRecorder()
		j.next.ServeHTTP(rec, req)
		if rec.Code/100 == 2 {
			n++
		}
	}
	return n, sc.Err()
}

func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	reg := fs.String("registry", "", "HOST:PORT of the registry")
	_ = fs.Parse(args)
	if *reg == "" || fs.NArg() == 0 {
		usage()
	}
	for _, t := range fs.Args() {
		if err := pushTar(*reg, t); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

func pushTar(reg, path string) error {
	dir, err := os.MkdirTemp("", "tug-registry-push-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := untar(path, dir); err != nil {
		return err
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		return err
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		src := d.Annotations["io.containerd.image.name"]
		if src == "" {
			continue
		}
		ref, err := name.ParseReference(reg+"/"+repoPath(src), name.Insecure)
		if err != nil {
			return err
		}
		if have, err := remote.Head(ref); err == nil && have.Digest == d.Digest {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		got, err := img.Digest()
		if err != nil {
			return err
		}
		if got != d.Digest {
			return fmt.Errorf("%s pushed as %s, not %s", ref, got, d.Digest)
		}
		fmt.Printf("pushed %s@%s\n", ref, got)
	}
	return nil
}

// repoPath is an image name without its registry host:
// localhost/tug/sample:v1 -> tug/sample:v1.
func repoPath(ref string) string {
	if i := strings.Index(ref, "/"); i > 0 && strings.ContainsAny(ref[:i], ".:") || strings.HasPrefix(ref, "localhost/") {
		return ref[i+1:]
	}
	return ref
}

func untar(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
