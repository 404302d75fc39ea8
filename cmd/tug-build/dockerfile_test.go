package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPlainHTTPHosts(t *testing.T) {
	df := "# syntax\nFROM --platform=linux/amd64 10.0.0.5:5000/base:v1 AS build\nRUN x\nfrom localhost:5000/run:1\nFROM docker.io/library/busybox\nFROM build\n"
	got := plainHTTPHosts("10.200.0.1:15000", df)
	want := []string{"10.0.0.5:5000", "10.200.0.1:15000", "localhost:5000"}
	if !slices.Equal(got, want) {
		t.Errorf("plainHTTPHosts = %q, want %q", got, want)
	}
	if got := plainHTTPHosts("registry.example.com", "FROM ghcr.io/x/y:1\n"); len(got) != 0 {
		t.Errorf("public registries over plain HTTP: %q", got)
	}
}

func TestMetadataDigest(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.json")
	if err := os.WriteFile(p, []byte(`{"containerimage.digest":"sha256:abc","image.name":"r/x:latest"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := metadataDigest(p); err != nil || d != "sha256:abc" {
		t.Errorf("metadataDigest = %q, %v", d, err)
	}
	if err := os.WriteFile(p, []byte(`{"image.name":"r/x:latest"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := metadataDigest(p); err == nil {
		t.Error("metadata without a digest accepted")
	}
}

// buildkit-setup: buildkitd verifies the one client certificate, the
// client verifies buildkitd as 127.0.0.1 and "buildkitd", and no file
// holds the CA's key (no one can sign another client).
func TestBuildkitSetup(t *testing.T) {
	daemon, client := t.TempDir(), t.TempDir()
	if err := writeBuildkitSetup(daemon, client, []string{"10.200.0.1:15000"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(daemon, "buildkitd.toml"))
	if err != nil || string(cfg) != "[registry.\"10.200.0.1:15000\"]\n  http = true\n  insecure = true\n" {
		t.Errorf("buildkitd.toml %q %v", cfg, err)
	}
	load := func(dir string) (*x509.CertPool, tls.Certificate) {
		t.Helper()
		ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			t.Fatal("no CA")
		}
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"cert.pem", "key.pem"} {
			if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v", f, fi.Mode(), err)
			}
		}
		return pool, pair
	}
	daemonCA, server := load(daemon)
	clientCA, cl := load(client)
	sc, _ := x509.ParseCertificate(server.Certificate[0])
	cc, _ := x509.ParseCertificate(cl.Certificate[0])
	for _, name := range []string{"127.0.0.1", buildkitServerName} {
		if _, err := sc.Verify(x509.VerifyOptions{Roots: clientCA, DNSName: name}); err != nil {
			t.Errorf("the client does not verify buildkitd as %s: %v", name, err)
		}
	}
	if _, err := cc.Verify(x509.VerifyOptions{Roots: daemonCA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("buildkitd does not verify the client: %v", err)
	}
	if _, err := sc.Verify(x509.VerifyOptions{Roots: daemonCA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the server's own certificate (which RUN steps may read) passes as a client")
	}
	for _, dir := range []string{daemon, client} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if strings.Count(string(b), "PRIVATE KEY-----") > 2 || e.Name() != "key.pem" && strings.Contains(string(b), "PRIVATE KEY") {
				t.Errorf("%s/%s holds a key it should not", dir, e.Name())
			}
		}
	}
}
