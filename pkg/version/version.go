// Package version holds the build's identity, stamped at link time:
//
//	go build -ldflags "-X tug.dev/tug/pkg/version.Version=v1.2.3 \
//	  -X tug.dev/tug/pkg/version.Commit=abc123 -X tug.dev/tug/pkg/version.Date=2026-01-01T00:00:00Z"
//
// A plain `go build` leaves the defaults; then the VCS data that the Go
// toolchain embeds (when built inside a git checkout) fills the gaps.
package version

import (
	"runtime"
	"runtime/debug"
)

// Stamped by -ldflags -X. They are variables only because -X needs them to be;
// nothing else writes them.
var (
	Version = "dev"
	Commit  = "none"
	Date    = "unknown"
)

// Info is the client half of `tug version -o json`; its JSON shape is
// documented in docs/output.md and kept stable.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this binary's identity.
func Get() Info {
	info := Info{
		Version:   Version,
		Commit:    Commit,
		Date:      Date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fillFromBuildInfo(&info, bi)
	}
	return info
}

// fillFromBuildInfo fills only what -ldflags left at its default, so a release
// build always reports exactly what the release pipeline stamped.
func fillFromBuildInfo(info *Info, bi *debug.BuildInfo) {
	if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		// `go install tug.dev/tug/cmd/tug@v1.2.3` records the module version.
		info.Version = bi.Main.Version
	}
	var modified, fromVCS bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if info.Commit == "none" {
				info.Commit = s.Value
				fromVCS = true
			}
		case "vcs.time":
			if info.Date == "unknown" {
				info.Date = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && fromVCS {
		info.Commit += "-dirty"
	}
}
