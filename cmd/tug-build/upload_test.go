package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"tug.dev/tug/pkg/imagebuild/protocol"
)

// pushRandom pushes an image of n random layers as ref, with the build
// metadata label of one web process.
func pushRandom(t *testing.T, ref string, base v1.Image, n int64) v1.Image {
	t.Helper()
	img := base
	if img == nil {
		var err error
		if img, err = random.Image(100, n); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := cf.Config
	cfg.Labels = map[string]string{labelBuild: `{"processes":[{"type":"web"}],"buildpacks":[{"id":"tug.test/shell","version":"0.1.0"}]}`}
	if img, err = mutate.Config(img, cfg); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	return img
}

// The counts come from the registry's manifests: the tag's image before
// the build against the built image; a first build has every layer new;
// a registry that cannot say gives no counts at all.
func TestReadPreviousAndCompare(t *testing.T) {
	var fail bool
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail && strings.Contains(r.URL.Path, "/manifests/") {
			http.Error(w, "not for you", http.StatusForbidden)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	b := &cnbBuild{repo: host + "/team/app", tag: "latest"}

	first := b.readPrevious()
	if !first.known || first.image != "" || first.layers != nil {
		t.Fatalf("a tag that names nothing: %+v, want known with no image", first)
	}

	old := pushRandom(t, host+"/team/app:latest", nil, 3)
	prev := b.readPrevious()
	d, _ := old.Digest()
	if !prev.known || prev.image != host+"/team/app@"+d.String() || len(prev.layers) != 3 {
		t.Fatalf("the tag's image: %+v, want %s with 3 layers", prev, d)
	}

	// the next image keeps two of the old layers and adds one
	oldLayers, _ := old.Layers()
	extra, _ := random.Layer(2000, "application/vnd.oci.image.layer.v1.tar+gzip")
	next, err := mutate.AppendLayers(mustBase(t, oldLayers[:2]), extra)
	if err != nil {
		t.Fatal(err)
	}
	next = pushRandom(t, host+"/team/app:latest", next, 0)
	nd, _ := next.Digest()
	layers, err := b.readProcesses(host + "/team/app@" + nd.String())
	if err != nil || len(layers) != 3 || strings.Join(b.res.Processes, ",") != "web" {
		t.Fatalf("readProcesses: %v layers, processes %v, %v", len(layers), b.res.Processes, err)
	}
	u := protocol.CompareLayers(prev.image, prev.layers, layers)
	extraSize, _ := extra.Size()
	if u.NewLayers != 1 || u.NewBytes != extraSize || u.ReusedLayers != 2 || u.ReusedBytes != prev.layers[0].Size+prev.layers[1].Size {
		t.Errorf("upload %+v, want 1 new layer of %d bytes and 2 reused", u, extraSize)
	}

	fail = true
	if p := b.readPrevious(); p.known {
		t.Errorf("a registry that refuses the read: %+v, want the counts unknown", p)
	}
}

func mustBase(t *testing.T, layers []v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(emptyImage(t), layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func emptyImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
