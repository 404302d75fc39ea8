package promote

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
)

// Copy is an image copied by digest from the source's repository to the
// target's, because the target pulls from its own (its build settings'
// repository, or --to-repository).
type Copy struct {
	From string `json:"from"` // REPO@sha256:...
	To   string `json:"to"`   // REPO@sha256:...
}

// CopyImage copies the manifest (an image or an index with every image
// it names) and the blobs of c.From to c.To, by digest: read with
// readKeys (the source app's credentials), written with writeKeys (the
// target's), each its own even on one registry host, so neither side's
// login is used for the other's repository. The copy is then checked:
// the target must serve c.To's digest. A copy is idempotent: a blob or
// manifest the target holds already is not sent again, so a promote cut
// short copies again at no cost.
func CopyImage(ctx context.Context, c Copy, readKeys, writeKeys authn.Keychain) error {
	src, err := name.NewDigest(c.From, insecure(c.From)...)
	if err != nil {
		return fmt.Errorf("copying %s: %w", c.From, err)
	}
	dst, err := name.NewDigest(c.To, insecure(c.To)...)
	if err != nil {
		return fmt.Errorf("copying to %s: %w", c.To, err)
	}
	read := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(readKeys)}
	write := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(writeKeys)}
	desc, err := remote.Get(src, read...)
	if err != nil {
		return fmt.Errorf("reading %s: %w", c.From, err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err == nil {
			err = remote.WriteIndex(dst, idx, write...)
		}
		if err != nil {
			return fmt.Errorf("copying %s to %s: %w", c.From, c.To, err)
		}
	} else {
		img, err := desc.Image()
		if err == nil {
			err = remote.Write(dst, img, write...)
		}
		if err != nil {
			return fmt.Errorf("copying %s to %s: %w", c.From, c.To, err)
		}
	}
	// the target runs c.To by digest: make sure its registry serves it
	got, err := remote.Head(dst, write...)
	if err != nil {
		return fmt.Errorf("checking the copy %s: %w", c.To, err)
	}
	if got.Digest.String() != dst.DigestStr() {
		return fmt.Errorf("the copy %s is served with digest %s, not %s", c.To, got.Digest, dst.DigestStr())
	}
	return nil
}

// insecure lets a registry on a private or loopback address be spoken to
// over plain HTTP, as builds do (pkg/imagebuild plainHTTP): a cluster's own
// registry rarely has a certificate.
func insecure(ref string) []name.Option {
	host, _, _ := strings.Cut(ref, "/")
	h := host
	if x, _, err := net.SplitHostPort(host); err == nil {
		h = x
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	if h == "localhost" || ip != nil && (ip.IsPrivate() || ip.IsLoopback()) {
		return []name.Option{name.Insecure}
	}
	return nil
}

// Keychain logs in with the servers of .dockerconfigjson Secrets.
type Keychain struct{ auths map[string]authn.AuthConfig }

// Resolve answers the credentials stored for r's registry, anonymous else.
func (k Keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if c, ok := k.auths[r.RegistryStr()]; ok {
		return authn.FromConfig(c), nil
	}
	return authn.Anonymous, nil
}

// Add reads a .dockerconfigjson's logins into k; the passwords stay in k
// and are never printed.
func (k *Keychain) Add(b []byte) error {
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		// not json's error: it may quote the content
		return errors.New("the registry Secret's .dockerconfigjson is not valid JSON")
	}
	if k.auths == nil {
		k.auths = map[string]authn.AuthConfig{}
	}
	for server, a := range cfg.Auths {
		u, p := a.Username, a.Password
		if u == "" && a.Auth != "" {
			if dec, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
				u, p, _ = strings.Cut(string(dec), ":")
			}
		}
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://"), "/")
		host, _, _ = strings.Cut(host, "/")
		if host == "index.docker.io" {
			host = name.DefaultRegistry
		}
		k.auths[host] = authn.AuthConfig{Username: u, Password: p}
	}
	return nil
}

// AddApp adds the credentials app a pulls with (its registry Secret), if
// it has any.
func (k *Keychain) AddApp(ctx context.Context, c kubernetes.Interface, namespace string, a *app.App) error {
	if a.RegistrySecret == "" {
		return nil
	}
	s, err := c.CoreV1().Secrets(namespace).Get(ctx, a.RegistrySecret, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the registry credentials of app %q: %w", a.Name, err)
	}
	return k.Add(s.Data[corev1.DockerConfigJsonKey])
}
