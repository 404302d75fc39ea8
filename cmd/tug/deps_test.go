package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryStaysLean guards tug's start-up budget (bench/version.sh): these
// packages each cost megabytes of binary and memory at every run. cobra/doc's
// man page converter belongs in the gendocs build only; cli-runtime's
// resource builder links kustomize; k8s.io/kubectl links most of kubectl.
func TestBinaryStaysLean(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("suspiciously few dependencies (%d): is go list listing the right package?", len(deps))
	}
	for _, d := range deps {
		for _, banned := range []string{
			"github.com/spf13/cobra/doc",
			"github.com/cpuguy83/go-md2man",
			"sigs.k8s.io/kustomize/",
			"k8s.io/cli-runtime/pkg/resource",
			"k8s.io/kubectl/",
		} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("tug links %s; keep it out of the binary (see the comment above)", d)
			}
		}
	}
}
