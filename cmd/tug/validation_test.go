package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
)

// endlessInput is standard input that never ends, like `yes | tug ...`.
type endlessInput struct{}

func (endlessInput) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	return len(p), nil
}

// TestHostileInputExits2BeforeAnyRequest (issue 12 items 7 and 8): each
// input is refused as a usage error (exit 2) naming what is wrong. There
// is no kubeconfig, so a command that got as far as a request would fail
// with exit 1 and a message about the cluster instead.
func TestHostileInputExits2BeforeAnyRequest(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("big", []byte(strings.Repeat("a", 1100*1024)))
	longProcfile := write("Procfile", []byte("web: ok\nworker: "+strings.Repeat("x", 70*1024)+"\n"))
	hugePEM := write("huge.pem", []byte(strings.Repeat("-", 600*1024)))
	for _, c := range []struct {
		args  []string
		stdin bool // endless standard input
		want  string
	}{
		// item 7: unbounded reads
		{args: []string{"env", "set", "shop", "K=@" + big}, want: "K=@" + big + ": larger than the 1 MiB limit"},
		{args: []string{"env", "set", "shop", "K=@-"}, stdin: true, want: "K=@-: larger than the 1 MiB limit"},
		{args: []string{"env", "set", "shop", "--from-env-file", "-"}, stdin: true, want: "--from-env-file -: larger than the 1 MiB limit"},
		{args: []string{"env", "set", "shop", "--from-env-file", big}, want: "--from-env-file " + big + ": larger than the 1 MiB limit"},
		{args: []string{"cert", "add", "shop", "shop.example.com", "--cert", hugePEM, "--key", hugePEM}, want: "--cert " + hugePEM + ": larger than the 512 KiB limit"},
		{args: []string{"registry", "set", "shop", "--server", "r.example.com", "--username", "u", "--password-stdin"}, stdin: true, want: "longer than 64 KiB"},
		// item 8: validation gaps
		{args: []string{"app", "deploy", "shop", "--image", "x", "--procfile", longProcfile}, want: "line 2 is longer than 64 KiB, the limit for one line"},
		{args: []string{"app", "autoscale", "set", "shop", "-p", "web", "--min", "1", "--max", "2", "--cpu", "4294967366%"}, want: "--cpu must be a percentage from 1% to 1000%, not 4294967366%"},
		{args: []string{"app", "allow", "add", "shop", "::ffff:10.0.0.1/104"}, want: "did you mean 10.0.0.0/8?"},
		{args: []string{"volume", "bind", "data", "shop", "--mount-path", "/."}, want: "cannot be the root directory"},
		{args: []string{"volume", "bind", "data", "shop", "--mount-path", "/./proc"}, want: "/proc belongs to the system"},
		{args: []string{"volume", "bind", "data", "shop", "--mount-path", "//sys"}, want: "/sys belongs to the system"},
		{args: []string{"app", "healthcheck", "set", "shop", "-p", "web", "--readiness", "http:8080/health check"}, want: `has " "; escape it as %20`},
		{args: []string{"app", "healthcheck", "set", "shop", "-p", "web", "--readiness", "tcp:80", "--timeout-seconds", "-1"}, want: "--timeout-seconds must not be negative"},
		{args: []string{"unit", "kill", "shop", "Bad_Name!"}, want: `invalid unit name "Bad_Name!"`},
		{args: []string{"unit", "list", "shop", "-p", "Bad_Name!"}, want: `invalid process name "Bad_Name!"`},
		{args: []string{"logs", "shop", "--unit", "Bad_Name!"}, want: `invalid unit name "Bad_Name!"`},
		{args: []string{"app", "exec", "shop", "--unit", "Bad_Name!", "--", "ls"}, want: `invalid unit name "Bad_Name!"`},
		{args: []string{"domain", "remove", "shop", "bad host!"}, want: `invalid host "bad host!"`},
		{args: []string{"cert", "remove", "shop", "bad host!"}, want: `invalid host "bad host!"`},
		{args: []string{"node", "remove", "Bad_Name!", "--yes"}, want: `invalid node "Bad_Name!"`},
		{args: []string{"node", "info", "Bad_Name!"}, want: `invalid node "Bad_Name!"`},
		{args: []string{"node", "update", "Bad_Name!", "--disable"}, want: `invalid node "Bad_Name!"`},
		{args: []string{"app", "tag", "unset", "shop", "bad key!"}, want: `invalid label key "bad key!"`},
	} {
		t.Run(strings.Join(c.args[:2], " ")+" "+c.want, func(t *testing.T) {
			var setup func(*cli.Factory)
			if c.stdin {
				setup = func(f *cli.Factory) { f.IOStreams.In = endlessInput{} }
			}
			r := execute(t, setup, c.args...)
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", r.code, r.stderr, c.want)
			}
			if strings.Contains(r.stderr, "kubeconfig") || strings.Contains(r.stderr, "cannot reach") {
				t.Errorf("the input was not checked before the cluster: %q", r.stderr)
			}
		})
	}
}
