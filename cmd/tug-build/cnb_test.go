package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestWriteOrderPicksTheBuildersVersions(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"heroku_nodejs/3.1.0", "heroku_nodejs/3.2.1", "heroku_procfile/4.0.0"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	path, err := writeOrder(work, dir, []string{"heroku/procfile", "heroku/nodejs@3.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "[[order]]\n  [[order.group]]\n    id = \"heroku/procfile\"\n    version = \"4.0.0\"\n  [[order.group]]\n    id = \"heroku/nodejs\"\n    version = \"3.1.0\"\n"
	if string(b) != want {
		t.Errorf("order.toml:\n%s\nwant:\n%s", b, want)
	}
	if _, err := writeOrder(work, dir, []string{"heroku/python"}); err == nil || !strings.Contains(err.Error(), "heroku/nodejs@3.2.1") {
		t.Errorf("a buildpack the builder lacks: %v", err)
	}
	if _, err := writeOrder(work, dir, []string{"heroku/nodejs@9.9.9"}); err == nil || !strings.Contains(err.Error(), "3.1.0, 3.2.1") {
		t.Errorf("a version the builder lacks: %v", err)
	}
}

func TestWriteBuildEnvWritesPlatformFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "env")
	if err := writeBuildEnv(dir, []string{"GREETING=hi there", "EMPTY=", "EQ=a=b"}); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"GREETING": "hi there", "EMPTY": "", "EQ": "a=b"} {
		if b, err := os.ReadFile(filepath.Join(dir, k)); err != nil || string(b) != v {
			t.Errorf("%s: %q %v, want %q", k, b, err, v)
		}
	}
	for _, bad := range []string{"../x=1", "a/b=1", "NOEQ"} {
		if err := writeBuildEnv(dir, []string{bad}); err == nil {
			t.Errorf("%q was written", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "x")); err == nil {
		t.Error("a build env name left the env folder")
	}
}

func TestReportDigest(t *testing.T) {
	p := filepath.Join(t.TempDir(), "report.toml")
	d := "sha256:" + strings.Repeat("ab", 32)
	report := "[build]\n  digest = \"sha256:" + strings.Repeat("cd", 32) + "\"\n\n[image]\n  tags = [\"r/shop:latest\"]\n  digest = \"" + d + "\"\n  manifest-size = 1234\n"
	if err := os.WriteFile(p, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := reportDigest(p); err != nil || got != d {
		t.Errorf("got %s %v, want the [image] digest %s", got, err, d)
	}
	if err := os.WriteFile(p, []byte("[image]\n  tags = [\"x\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := reportDigest(p); err == nil {
		t.Error("a report without a digest was read")
	}
}

func TestBuilderFromConfig(t *testing.T) {
	cfg := v1.Config{
		Env: []string{"PATH=/bin", "CNB_USER_ID=1002", "CNB_GROUP_ID=1000"},
		Labels: map[string]string{labelBuilder: `{"stack":{"runImage":{"image":"old/run"}},"images":[{"image":"new/run"}],` +
			`"buildpacks":[{"id":"a/b","version":"1.0.0"}],"lifecycle":{"version":"0.20.5","apis":{"platform":{"supported":["0.13","0.14"]}}}}`},
	}
	b, err := builderFromConfig(cfg)
	if err != nil || !b.CNB || b.UID != 1002 || b.GID != 1000 || b.RunImage != "new/run" || b.Lifecycle != "0.20.5" ||
		!slices.Equal(b.PlatformAPIs, []string{"0.13", "0.14"}) || !slices.Equal(b.Buildpacks, []string{"a/b@1.0.0"}) {
		t.Errorf("got %+v %v", b, err)
	}
	if b, err := builderFromConfig(v1.Config{}); err != nil || b.CNB {
		t.Errorf("an image without the label: %+v %v", b, err)
	}
	cfg.Env = []string{"PATH=/bin"}
	if _, err := builderFromConfig(cfg); err == nil {
		t.Error("a builder without CNB_USER_ID was taken")
	}
}
