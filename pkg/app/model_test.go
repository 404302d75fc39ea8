package app

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestNext(t *testing.T) {
	a := &App{Name: "shop", Pool: "web"}
	first := Next(a, nil, KindDeploy, "first")
	if first.Kind != KindDeploy || first.Message != "first" || first.Pool != "web" || first.Image != "" ||
		first.Processes == nil || len(first.Processes) != 0 || first.Limits != nil {
		t.Errorf("Next without a base = %+v", first)
	}

	base := &Release{App: "shop", Version: 4, Image: "shop:4", Pool: "gpu", Status: StatusDeployed, Author: "alice",
		Processes:    map[string]string{"web": "./server"},
		Limits:       map[string]Limits{"web": {CPU: "1"}},
		Healthchecks: map[string]Healthcheck{"web": {Readiness: "http:8080/"}},
		Tags:         map[string]string{"zone": "a"},
		Volumes:      []VolumeBinding{{Volume: "data", MountPath: "/data"}},
		ConfigKeys:   []string{"A"},
	}
	r := Next(a, base, KindEnv, "set A")
	if r.Kind != KindEnv || r.Message != "set A" || r.Image != "shop:4" || r.Pool != "gpu" {
		t.Errorf("Next = %+v", r)
	}
	if r.Version != 0 || r.Status != "" || r.Author != "" || r.ConfigKeys != nil {
		t.Errorf("Next carried over per-release fields: %+v", r)
	}
	if !maps.Equal(r.Processes, base.Processes) || !maps.Equal(r.Limits, base.Limits) ||
		!maps.Equal(r.Healthchecks, base.Healthchecks) || !maps.Equal(r.Tags, base.Tags) || !slices.Equal(r.Volumes, base.Volumes) {
		t.Errorf("Next lost settings: %+v", r)
	}
	// The new release's settings are copies: changing them leaves the base alone.
	r.Processes["worker"] = "./work"
	r.Limits["web"] = Limits{CPU: "2"}
	r.Healthchecks["web"] = Healthcheck{}
	r.Tags["zone"] = "b"
	r.Volumes[0].MountPath = "/elsewhere"
	if len(base.Processes) != 1 || base.Limits["web"].CPU != "1" || base.Healthchecks["web"].Readiness == "" ||
		base.Tags["zone"] != "a" || base.Volumes[0].MountPath != "/data" {
		t.Errorf("changing the next release changed its base: %+v", base)
	}
}

func TestFindRelease(t *testing.T) {
	s, _ := newStore(t)
	mustCreateApp(t, s, &App{Name: "shop"})
	mustCreateRelease(t, s, &Release{App: "shop", Version: 1, Status: StatusSuperseded, Image: "shop:1"}, ConfigMap{"A": "1"})
	mustCreateRelease(t, s, &Release{App: "shop", Version: 2, Status: StatusDeployed, Image: "shop:2"}, ConfigMap{"A": "2"})
	mustCreateRelease(t, s, &Release{App: "shop", Version: 3, Status: StatusFailed, Image: "shop:3"}, ConfigMap{"A": "3"})
	mustCreateRelease(t, s, &Release{App: "blog", Version: 9, Status: StatusDeployed, Image: "blog:9"}, nil)
	ctx := context.Background()

	r, cfg, err := s.FindRelease(ctx, "shop", func(r *Release) bool { return r.Status != StatusFailed })
	if err != nil || r == nil || r.Version != 2 || cfg["A"] != "2" {
		t.Errorf("newest not failed = %+v, %v, %v; want v2 with A=2", r, cfg, err)
	}
	r, cfg, err = s.FindRelease(ctx, "shop", func(*Release) bool { return true })
	if err != nil || r == nil || r.Version != 3 || cfg["A"] != "3" {
		t.Errorf("newest = %+v, %v, %v; want v3", r, cfg, err)
	}
	r, cfg, err = s.FindRelease(ctx, "shop", func(r *Release) bool { return r.Image == "blog:9" })
	if err != nil || r != nil || cfg != nil {
		t.Errorf("no match = %+v, %v, %v; want nil, nil, nil (another app's releases are not searched)", r, cfg, err)
	}
}

func TestReleaseRunImage(t *testing.T) {
	d := "sha256:" + strings.Repeat("c", 64)
	tests := []struct {
		image, id, want, digest string
	}{
		{"shop:1", "", "shop:1", ""},
		{"reg:5000/team/shop:1", "reg:5000/team/shop@" + d, "reg:5000/team/shop@" + d, d},
		{"team/shop:1", "docker.io/team/shop@" + d, "team/shop@" + d, d},
		{"docker.io/library/shop:1", "shop@" + d, "docker.io/library/shop@" + d, d},
		// the same image pulled under another name on that node: that
		// repository's digest, which Image's may not serve; the tag runs
		{"reg:5000/team/shop:1", "docker.io/team/shop@" + d, "reg:5000/team/shop:1", d},
		{"localhost/tug/sample:v2", "10.0.0.1:5000/tug/sample@" + d, "localhost/tug/sample:v2", d},
		{"reg:5000/shop", "reg:5000/shop@" + d, "reg:5000/shop@" + d, d},
		// loaded onto the nodes, not pulled: the ID is recorded and shown, but
		// only nodes holding the image could run it, so the tag runs
		{"localhost/sample:moving", d, "localhost/sample:moving", d},
		{"shop:1", "docker.io/library/shop@" + d, "shop@" + d, d},
		{"shop@" + d, "shop@" + d, "shop@" + d, d},
		{"", "", "", ""},
	}
	for _, tt := range tests {
		r := &Release{Image: tt.image, ImageID: tt.id}
		if got := r.RunImage(); got != tt.want {
			t.Errorf("RunImage(%q, %q) = %q, want %q", tt.image, tt.id, got, tt.want)
		}
		if got := r.ImageDigest(); got != tt.digest {
			t.Errorf("ImageDigest(%q) = %q, want %q", tt.id, got, tt.digest)
		}
	}
}

func TestNormalizeImageID(t *testing.T) {
	d := "sha256:" + strings.Repeat("0", 63) + "f"
	for in, want := range map[string]string{
		"docker-pullable://nginx@" + d: "nginx@" + d,
		"docker.io/library/nginx@" + d: "docker.io/library/nginx@" + d,
		d:                              d,
		"docker://" + d:                d,
		"":                             "",
		"sha256:abc":                   "",
		"nginx@sha512:" + strings.Repeat("0", 128): "",
		"sha256:" + strings.Repeat("G", 64):        "",
	} {
		if got := NormalizeImageID(in); got != want {
			t.Errorf("NormalizeImageID(%q) = %q, want %q", in, got, want)
		}
	}
}
