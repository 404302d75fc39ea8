package promote

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// loginsByRepository serves h to the user of each repository only:
// reader for src/..., writer for dst/... (one registry host, two logins,
// as a promote from a staging to a production repository often is).
func loginsByRepository(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		need := ""
		switch {
		case strings.HasPrefix(r.URL.Path, "/v2/src/"):
			need = "reader"
		case strings.HasPrefix(r.URL.Path, "/v2/dst/"):
			need = "writer"
		}
		if !ok || p != u+"-pw" || need != "" && u != need {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func keychainOf(t *testing.T, host, user string) Keychain {
	t.Helper()
	var k Keychain
	if err := k.Add([]byte(fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q}}}`, host, user, user+"-pw"))); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCopyImageReadsAndWritesWithEachSidesLogin(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(loginsByRepository(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	src, err := name.ParseReference(host+"/src/shop@"+digest.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(src, img, remote.WithAuth(&authn.Basic{Username: "reader", Password: "reader-pw"})); err != nil {
		t.Fatal(err)
	}
	read, write := keychainOf(t, host, "reader"), keychainOf(t, host, "writer")
	c := Copy{From: host + "/src/shop@" + digest.String(), To: host + "/dst/shop@" + digest.String()}

	// one host, credentials merged by host: one login serves both sides, and fails one
	if err := CopyImage(ctx, c, read, read); err == nil {
		t.Fatal("a copy with the reader's login for the write passed: the registry stand-in checks nothing")
	}
	if err := CopyImage(ctx, c, read, write); err != nil {
		t.Fatalf("copy with each side's login: %v", err)
	}
	dst, err := name.ParseReference(c.To, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Head(dst, remote.WithAuth(&authn.Basic{Username: "writer", Password: "writer-pw"}))
	if err != nil || got.Digest != digest {
		t.Errorf("the target serves %v (%v), want %s", got, err, digest)
	}
	// the copy names a digest the registry does not serve for it: refused
	bad := Copy{From: c.From, To: host + "/dst/shop@sha256:" + strings.Repeat("0", 64)}
	if err := CopyImage(ctx, bad, read, write); err == nil {
		t.Error("a copy whose target digest differs from the image's passed")
	}
}
