package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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
