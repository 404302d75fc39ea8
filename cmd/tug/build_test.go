package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/kube/kubetest"
)

// TestDeployRefusesABadRepositoryBeforeAnything (issue 22 item 9): a
// repository with a tag, a digest or capitals is a usage error of the
// plan, before a build pod or a failed release is made. (Before, the agent
// refused it in the pod after the build step: exit 16 and a failed
// release; the short --build-timeout bounds that run on the fake cluster,
// whose pods never start.)
func TestDeployRefusesABadRepositoryBeforeAnything(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "index.html"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ repo, want string }{
		{"reg.example.com/shop:v2", "has a tag (:v2)"},
		{"reg.example.com/shop@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "has a digest"},
		{"reg.example.com/Team/shop", "has capitals"},
	} {
		t.Run(c.want, func(t *testing.T) {
			p := newPrinterFixture(t)
			p.mustCreateApp(t, &app.App{Name: "shop", CreatedAt: p.ago("created", time.Hour)})
			before := kubetest.Objects(t, p.cs, "dev")
			r := p.run(t, false, "app", "deploy", "shop", "--source", src, "--builder", "reg.example.com/builder:v1",
				"--repository", c.repo, "--build-timeout", "2s")
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "--repository") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming --repository and %q", r.code, r.stderr, c.want)
			}
			if d := kubetest.Diff(before, kubetest.Objects(t, p.cs, "dev")); len(d) > 0 {
				t.Errorf("a bad --repository changed the cluster: %q", d)
			}
		})
	}
}
