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
			"github.com/moby/buildkit", // runs in the build pod (cmd/tug-build's image)
			// go-containerregistry is linked for app promote's copy by digest
			// (pkg/promote copy.go): measured +1.1 MB stripped binary and
			// +3.5 MiB peak RSS on 'version --client' (33.8 -> 37.3 MiB, median of
			// 15 by bench/measure); its daemon and layout
			// packages stay the build agent's
			"github.com/google/go-containerregistry/pkg/v1/daemon",
			"github.com/google/go-containerregistry/pkg/v1/layout",
		} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("tug links %s; keep it out of the binary (see the comment above)", d)
			}
		}
	}
}

// TestLibraryPackagesDoNotImportCLI keeps pkg/* free of the command line:
// library packages declare the small interfaces they need (streams, a
// prompter, progress) and cmd/tug passes pkg/cli values that satisfy them.
// Only pkg/cli and its subpackages may import pkg/cli, in tests too.
func TestLibraryPackagesDoNotImportCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const cliPkg = "tug.dev/tug/pkg/cli"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "tug.dev/tug/pkg/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("suspiciously few packages (%d): is go list listing pkg/...?", len(lines))
	}
	underCLI := func(p string) bool { return p == cliPkg || strings.HasPrefix(p, cliPkg+"/") }
	for _, l := range lines {
		f := strings.Fields(l)
		if underCLI(f[0]) {
			continue
		}
		for _, imp := range f[1:] {
			if underCLI(imp) {
				t.Errorf("%s imports %s; declare a small interface in %s instead and let cmd/tug pass the cli value", f[0], imp, f[0])
			}
		}
	}
}

// TestRenderMakesNoCalls keeps pkg/render pure: it computes objects from an
// app record and a release, so it imports no client (client-go) and none
// of the packages that apply what it renders (pkg/deploy and those above
// it); dry-run and export depend on the same inputs giving the same objects.
func TestRenderMakesNoCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "tug.dev/tug/pkg/render").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := strings.Fields(string(out))
	if len(imports) < 3 {
		t.Fatalf("suspiciously few imports (%d): is go list listing pkg/render?", len(imports))
	}
	for _, imp := range imports {
		for _, banned := range []string{"k8s.io/client-go/", "tug.dev/tug/pkg/deploy", "tug.dev/tug/pkg/canary", "tug.dev/tug/pkg/cli"} {
			if strings.HasPrefix(imp, banned) {
				t.Errorf("pkg/render imports %s; rendering makes no API calls and does not depend on what applies it", imp)
			}
		}
	}
}
