// Command gendocs regenerates tug's command reference (docs/reference),
// man pages (docs/man) and RBAC roles (docs/rbac):
//
//	go run ./hack/gendocs docs
//
// The generator lives in tug itself, as the hidden `__gendocs` command of a
// build with -tags gendocs, because the command tree is in package main and
// cannot be imported. That build links cobra/doc and its Markdown-to-roff
// converter; release builds, without the tag, do not.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/gendocs DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("finding the module root: %w", err)
	}
	cmd := exec.Command("go", "run", "-tags", "gendocs", "./cmd/tug", "__gendocs", dir)
	cmd.Dir = strings.TrimSpace(string(root))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Defaults in the generated text must not depend on who runs this.
	cmd.Env = append(os.Environ(), "KUBECONFIG=", "NO_COLOR=1")
	return cmd.Run()
}
