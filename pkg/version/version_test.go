package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGetReportsRuntime(t *testing.T) {
	info := Get()
	if info.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", info.GoVersion, runtime.Version())
	}
	if want := runtime.GOOS + "/" + runtime.GOARCH; info.Platform != want {
		t.Errorf("Platform = %q, want %q", info.Platform, want)
	}
}

func TestFillFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	info := Info{Version: "dev", Commit: "none", Date: "unknown"}
	fillFromBuildInfo(&info, bi)
	want := Info{Version: "v1.2.3", Commit: "abc123-dirty", Date: "2026-01-02T03:04:05Z"}
	if info != want {
		t.Errorf("got %+v, want %+v", info, want)
	}
}

func TestFillFromBuildInfoKeepsStampedValues(t *testing.T) {
	bi := &debug.BuildInfo{
		Main:     debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2020-01-01T00:00:00Z"}},
	}
	info := Info{Version: "v9.9.9", Commit: "fff", Date: "2026-01-01"}
	fillFromBuildInfo(&info, bi)
	want := Info{Version: "v9.9.9", Commit: "fff", Date: "2026-01-01"}
	if info != want {
		t.Errorf("got %+v, want %+v", info, want)
	}
}
