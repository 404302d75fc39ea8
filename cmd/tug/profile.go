//go:build profile

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// startProfile writes a CPU profile to $TUG_CPUPROFILE ("%p" in it: the
// process ID) until the command
// ends, in a binary built with -tags profile (for finding where a
// benchmark's CPU goes; release builds carry no profiler).
func startProfile() func() {
	path := os.Getenv("TUG_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	// one file per process: benchmarks run tug many times
	f, err := os.Create(strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid())))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tug: cpu profile: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
