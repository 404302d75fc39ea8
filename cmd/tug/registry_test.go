package main

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/registry"
)

// Bad registry input is a usage error caught before any cluster is reached,
// and no message repeats the password, wherever it was typed.
func TestRegistrySetBadInputNeverShowsThePassword(t *testing.T) {
	const pw = "hunter2-Secret"
	cases := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"password flag", "", []string{"registry", "set", "shop", "--server", "r.io", "--username", "u", "--password", pw}, "pipe it in with --password-stdin"},
		{"password flag with stdin too", pw, []string{"registry", "set", "shop", "--server", "r.io", "--username", "u", "--password-stdin", "--password=" + pw}, "--password is not accepted"},
		{"password as an argument", "", []string{"registry", "set", "shop", pw, "--server", "r.io", "--username", "u", "--password-stdin"}, "takes only APP"},
		{"no --password-stdin", pw, []string{"registry", "set", "shop", "--server", "r.io", "--username", "u"}, "--password-stdin is required"},
		{"empty stdin", "", []string{"registry", "set", "shop", "--server", "r.io", "--username", "u", "--password-stdin"}, "no password on stdin"},
		{"two lines", pw + "\nmore\n", []string{"registry", "set", "shop", "--server", "r.io", "--username", "u", "--password-stdin"}, "several lines"},
		{"no server", pw, []string{"registry", "set", "shop", "--username", "u", "--password-stdin"}, "--server is required"},
		{"bad server", pw, []string{"registry", "set", "shop", "--server", "r.io:x", "--username", "u", "--password-stdin"}, "invalid --server"},
		{"no username", pw, []string{"registry", "set", "shop", "--server", "r.io", "--password-stdin"}, "--username is required"},
		{"bad app", pw, []string{"registry", "set", "Shop", "--server", "r.io", "--username", "u", "--password-stdin"}, "invalid app name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			ios, in, out, errOut := cli.TestIOStreams()
			in.WriteString(c.stdin)
			r := executeWith(cli.NewFactory(ios, "tug"), out, errOut, c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("want exit 2 saying %q, got %d:\n%s%s", c.want, r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, pw) {
				t.Fatalf("the password shows in the output:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

func TestRegistrySetHidesThePasswordFlag(t *testing.T) {
	r := execute(t, nil, "registry", "set", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "--password-stdin") || strings.Contains(r.stdout, "--password ") {
		t.Fatalf("help should show --password-stdin only:\n%s", r.stdout)
	}
}

func TestVolumeBadInputExit2(t *testing.T) {
	for _, args := range [][]string{
		{"volume", "create", "data"},
		{"volume", "create", "data", "--size", "lots"},
		{"volume", "create", "data", "--size", "0"},
		{"volume", "create", "Data", "--size", "1Gi"},
		{"volume", "create", "data", "--size", "1Gi", "--access-mode", "RW"},
		{"volume", "bind", "shop", "data"},
		{"volume", "bind", "shop", "data", "--mount-path", "data"},
		{"volume", "bind", "shop", "data", "--mount-path", "/"},
		{"volume", "bind", "shop", "data", "--mount-path", "/x/../y"},
		{"volume", "bind", "shop", "data", "--mount-path", "/data", "-p", "Web"},
		{"volume", "bind", "shop", "Data", "--mount-path", "/data"},
		{"volume", "unbind", "shop"},
		{"volume", "remove", "Data"},
		{"volume", "list", "extra"},
	} {
		r := execute(t, nil, args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "error: ") {
			t.Errorf("tug %q: want exit 2 with an error line, got %d:\n%s", args, r.code, r.stderr)
		}
	}
}

// set reads the password from stdin into the options, with one trailing
// newline dropped; the run gets the credentials, nothing else does.
func TestNewRegistryCmds(t *testing.T) {
	ios, in, _, _ := cli.TestIOStreams()
	in.WriteString("hunter2\n")
	f := cli.NewFactory(ios, "tug")
	var got *registrySetOptions
	cmd := newRegistrySetCmd(f, func(_ context.Context, o *registrySetOptions) error { got = o; return nil })
	if err := executeCmd(cmd, "shop", "--server", " registry.example.com ", "--username", "ci", "--password-stdin", "--no-wait"); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.App != "shop" || got.Creds != (registry.Credentials{Server: "registry.example.com", Username: "ci", Password: "hunter2"}) || !got.rollout.NoWait {
		t.Fatalf("options %+v", got)
	}
	u, err := parseCmd(t, newRegistryUnsetCmd, "shop", "-o", "json")
	if err != nil || u == nil || u.App != "shop" || u.Rollout.Output != cli.OutputJSON {
		t.Fatalf("unset: error %v, options %+v", err, u)
	}
	u, err = parseCmd(t, newRegistryUnsetCmd, "shop", "--timeout", "-1m")
	wantParseError(t, u, err, "--timeout must be positive")
	i, err := parseCmd(t, newRegistryInfoCmd, "shop", "-o", "yaml")
	if err != nil || i == nil || i.App != "shop" || i.Output.Format != cli.OutputYAML {
		t.Fatalf("info: error %v, options %+v", err, i)
	}
}

// Before the first deploy, set stores the credentials for it; info shows
// them, never the password; unset removes them.
func TestRunRegistrySetInfoUnset(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop"})
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	set := &registrySetOptions{Changer: fixtureChanger(p, ios), App: "shop",
		Creds: registry.Credentials{Server: "registry.example.com", Username: "ci", Password: "hunter2"}}
	set.rollout.Output = cli.OutputTable
	if err := runRegistrySet(ctx, set); err != nil || !strings.Contains(errOut.String(), "shop's first deploy pulls with them") {
		t.Fatalf("set: %v, stderr %q", err, errOut)
	}
	info := &registryInfoOptions{IO: ios, Store: fixtureStore(p), CommandName: "tug", App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runRegistryInfo(ctx, info); err != nil || !strings.Contains(out.String(), "Server:    registry.example.com\n") || strings.Contains(out.String()+errOut.String(), "hunter2") {
		t.Errorf("info: %v\n%s", err, out)
	}
	unset := &registryUnsetOptions{Changer: fixtureChanger(p, ios), App: "shop", Rollout: rolloutFlags{Output: cli.OutputTable}}
	if err := runRegistryUnset(ctx, unset); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runRegistryInfo(ctx, info); err != nil || !strings.Contains(out.String(), "pulls its image without credentials; set some with 'tug registry set shop") {
		t.Errorf("info after unset: %v\n%s", err, out)
	}
}
