package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"tug.dev/tug/pkg/app"
)

// lastLogLines heads the log lines of a failure report: "last log line",
// "last 20 log lines".
func lastLogLines(n int) string {
	if n == 1 {
		return "last log line"
	}
	return fmt.Sprintf("last %d log lines", n)
}

// builtWithLine is what built the release's image, for app info.
func builtWithLine(b *app.BuiltWith) string {
	if b == nil {
		return ""
	}
	line := "builder " + b.Builder
	if len(b.Buildpacks) > 0 {
		line += ", buildpacks " + strings.Join(b.Buildpacks, ", ")
	}
	return line
}

// cacheMissNote passes a build's log through and, after BuildKit's report
// that the registry cache it imports is missing, says that this is
// expected: a first build has no cache yet (it exports one), and BuildKit
// prints the miss as an ERROR. pkg/imagebuild writes the log a line per Write.
type cacheMissNote struct{ w io.Writer }

var cacheImporterMissing = []byte("failed to configure registry cache importer")

func (c cacheMissNote) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err == nil && bytes.Contains(p, cacheImporterMissing) && bytes.Contains(p, []byte("not found")) {
		_, err = io.WriteString(c.w, "-----> that cache ERROR is expected on a first build: there is no build cache yet, and this build makes one\n")
	}
	return n, err
}
