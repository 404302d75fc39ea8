package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
)

func TestNewAppPromoteCmd(t *testing.T) {
	for _, tt := range []struct {
		name    string
		argv    []string
		wantErr string
	}{
		{name: "ns/app", argv: []string{"staging/shop", "prod/shop", "--yes", "--to-repository", "reg.example/team/shop"}},
		{name: "one arg", argv: []string{"shop"}, wantErr: "missing DST"},
		{name: "bad target", argv: []string{"shop", "prod/Shop"}, wantErr: `invalid target app "prod/Shop"`},
		{name: "bad namespace", argv: []string{"Staging/shop", "prod/shop"}, wantErr: `invalid source app "Staging/shop"`},
		{name: "repository with a tag", argv: []string{"shop", "prod/shop", "--to-repository", "reg.example/shop:1"}, wantErr: "--to-repository"},
		{name: "dry run and no wait", argv: []string{"shop", "prod/shop", "--dry-run", "--no-wait"}, wantErr: "cannot be used together"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newAppPromoteCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o.Source != (nsApp{"staging", "shop"}) || o.Target != (nsApp{"prod", "shop"}) || !o.Yes || o.ToRepository != "reg.example/team/shop" {
				t.Fatalf("error %v, options %+v", err, o)
			}
		})
	}
}

func TestNewReviewUpCmd(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name    string
		argv    []string
		wantErr string
	}{
		{name: "image", argv: []string{"shop", "--name", "pr-42", "--image", "reg.example/shop:1", "--ttl", "24h", "--review-override", "DB=x"}},
		{name: "source", argv: []string{"shop", "--name", "pr-42", "--source", dir}},
		{name: "no name", argv: []string{"shop", "--image", "shop:1"}, wantErr: "--name is required"},
		{name: "bad name", argv: []string{"shop", "--name", "PR_42", "--image", "shop:1"}, wantErr: "DNS label"},
		{name: "negative ttl", argv: []string{"shop", "--name", "pr-42", "--ttl", "-1h", "--image", "shop:1"}, wantErr: "--ttl must be positive"},
		{name: "both", argv: []string{"shop", "--name", "pr-42", "--image", "shop:1", "--source", dir}, wantErr: "cannot be used together"},
		{name: "no folder", argv: []string{"shop", "--name", "pr-42", "--source", dir + "/nope"}, wantErr: "is not a folder"},
		{name: "bad override", argv: []string{"shop", "--name", "pr-42", "--image", "shop:1", "--review-override", "1X=y"}, wantErr: "1X"},
		{name: "forks", argv: []string{"shop", "--name", "pr-42", "--image", "shop:1", "--fork-service", "db", "--fork-service", "orders", "--service-size", "256Mi"}},
		{name: "bad fork", argv: []string{"shop", "--name", "pr-42", "--image", "shop:1", "--fork-service", "Bad_Name"}, wantErr: "--fork-service: invalid service name"},
		{name: "fork twice", argv: []string{"shop", "--name", "pr-42", "--image", "shop:1", "--fork-service", "db", "--fork-service", "db"}, wantErr: "given twice"},
		{name: "bad size", argv: []string{"shop", "--name", "pr-42", "--image", "shop:1", "--service-size", "0"}, wantErr: "invalid --service-size"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newReviewUpCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o.App != "shop" || o.Name != "pr-42" {
				t.Fatalf("error %v, options %+v", err, o)
			}
			if tt.name == "image" && (o.TTL != 24*time.Hour || o.overrides["DB"] != "x") {
				t.Errorf("options %+v", o)
			}
			if tt.name == "forks" && (strings.Join(o.ForkServices, ",") != "db,orders" || o.ServiceSize != "256Mi") {
				t.Errorf("--fork-service, --service-size: %+v", o)
			}
		})
	}
}

func TestNewReviewDownAndPipelineCmds(t *testing.T) {
	if o, err := parseCmd(t, newReviewDownCmd, "shop", "--name", "pr-1", "--yes"); err != nil || o.Name != "pr-1" || !o.Yes {
		t.Errorf("review down: %v %+v", err, o)
	}
	o, err := parseCmd(t, newReviewDownCmd, "shop")
	wantParseError(t, o, err, "--name is required")
	p, err := parseCmd(t, newPipelineSetCmd, "shop")
	wantParseError(t, p, err, "missing STAGE")
	if p, err := parseCmd(t, newPipelineSetCmd, "shop", "dev/shop", "prod/shop"); err != nil || p.Name != "shop" || len(p.Stages) != 2 {
		t.Errorf("pipeline set: %v %+v", err, p)
	}
	q, err := parseCmd(t, newPipelinePromoteCmd, "shop")
	wantParseError(t, q, err, "missing STAGE")
}

// A dry run shows the differences (names, never values) and changes
// nothing; a per-stage build env refuses the promote (exit 2) without
// --force, naming the key.
func TestRunAppPromoteDryRunAndRefusal(t *testing.T) {
	p := newPrinterFixture(t)
	ctx := context.Background()
	digest := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	for _, s := range []struct {
		ns, image, env, key string
		procs               map[string]string
	}{
		{"staging", "reg.example/shop@" + digest("a"), "API=https://staging", "ONLY_STAGING", map[string]string{"web": "serve", "worker": "work"}},
		{"prod", "reg.example/shop@" + digest("b"), "API=https://prod", "ONLY_PROD", map[string]string{"web": "serve"}},
	} {
		st := &app.Store{Client: p.cs, Namespace: s.ns}
		if err := st.CreateApp(ctx, &app.App{Name: "shop", Namespace: s.ns, Release: 1, LastRelease: 1, Image: s.image,
			Build: &app.BuildSettings{BuildEnv: []string{s.env}}}); err != nil {
			t.Fatal(err)
		}
		r := &app.Release{App: "shop", Version: 1, Image: s.image, Processes: s.procs, Status: app.StatusDeployed, Kind: app.KindDeploy}
		if err := st.CreateRelease(ctx, r, app.ConfigMap{s.key: "value-" + s.ns}); err != nil {
			t.Fatal(err)
		}
	}
	r := p.run(t, false, "app", "promote", "staging/shop", "prod/shop", "--dry-run")
	for _, want := range []string{"promote staging/shop v1 (sha256:aaaaaaaaaaaa) to prod/shop (now v1, sha256:bbbbbbbbbbbb)",
		"config only in the source (not copied): ONLY_STAGING", "config only in the target (kept): ONLY_PROD",
		"process worker: added (work)", "build env differing by app (baked into the image): API", "refused without --force", "dry run: nothing changed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, value := range []string{"value-", "https://"} {
		if strings.Contains(r.stdout+r.stderr, value) {
			t.Errorf("a value is shown (%q):\n%s%s", value, r.stdout, r.stderr)
		}
	}
	if r.code != 0 {
		t.Errorf("dry run exit %d: %s", r.code, r.stderr)
	}
	r = p.run(t, false, "app", "promote", "staging/shop", "prod/shop", "--yes")
	if r.code != 2 || !strings.Contains(r.stderr, "build env API") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("refusal: exit %d\n%s", r.code, r.stderr)
	}
	rels, err := (&app.Store{Client: p.cs, Namespace: "prod"}).ListReleases(ctx, "shop")
	if err != nil || len(rels) != 1 {
		t.Errorf("prod's releases after a dry run and a refusal: %d, %v", len(rels), err)
	}
}

func TestExpiresIn(t *testing.T) {
	now := time.Now()
	for d, want := range map[time.Duration]string{72 * time.Hour: "in 72h", 90 * time.Minute: "in 1h30m", 20 * time.Second: "in less than a minute", -time.Second: "expired", 5 * time.Minute: "in 5m"} {
		if got := expiresIn(now.Add(d), now); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}

// A --to-context whose context has another name but reaches the same API
// server and namespace is the source itself: refused, exit 2, no release.
func TestAppPromoteRefusesContextAliasOfSource(t *testing.T) {
	p := newPrinterFixture(t)
	ctx := context.Background()
	kubeconfig := `apiVersion: v1
kind: Config
current-context: dev
clusters:
- {name: local, cluster: {server: "https://127.0.0.1:6443"}}
- {name: same-again, cluster: {server: "https://127.0.0.1:6443/"}}
contexts:
- {name: dev, context: {cluster: local, user: bob, namespace: dev}}
- {name: alias, context: {cluster: same-again, user: bob, namespace: dev}}
users: [{name: bob, user: {token: abc}}]
`
	if err := os.WriteFile(p.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	image := "reg.example/shop@sha256:" + strings.Repeat("a", 64)
	if err := p.store.CreateApp(ctx, &app.App{Name: "shop", Namespace: "dev", Release: 1, LastRelease: 1, Image: image}); err != nil {
		t.Fatal(err)
	}
	r := &app.Release{App: "shop", Version: 1, Image: image, Processes: map[string]string{"web": "serve"}, Status: app.StatusDeployed, Kind: app.KindDeploy}
	if err := p.store.CreateRelease(ctx, r, app.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	res := p.run(t, false, "app", "promote", "shop", "shop", "--to-context", "alias", "--yes")
	if res.code != 2 || !strings.Contains(res.stderr, "the target is the source") {
		t.Errorf("promote to a context alias of the source: exit %d\n%s", res.code, res.stderr)
	}
	if rels, err := p.store.ListReleases(ctx, "shop"); err != nil || len(rels) != 1 {
		t.Errorf("releases after the refusal: %d, %v", len(rels), err)
	}
}

// Bad input to review down and review up (piped without --yes, an app in
// the review app's way) exits 2 before the sweep removes anything.
func TestReviewInputChecksComeBeforeTheSweep(t *testing.T) {
	p := newPrinterFixture(t)
	ctx := context.Background()
	for _, a := range []*app.App{
		{Name: "shop", Namespace: "dev"},
		{Name: "shop-pr-x", Namespace: "dev"}, // not a review app
		{Name: "shop-pr-1", Namespace: "dev", Review: &app.Review{Of: "shop", Name: "pr-1", ExpiresAt: time.Now().Add(-time.Hour)}},
	} {
		if err := p.store.CreateApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"review", "down", "shop", "--name", "pr-1"}, // piped, no --yes
		{"review", "down", "shop", "--name", "pr-x", "--yes"},
		{"review", "up", "shop", "--name", "pr-x", "--image", "reg.example/shop:2"},
	} {
		r := p.run(t, false, args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
		// the sweep's removal (which the fake cluster cannot finish) says
		// so on stderr when it ran
		if _, err := p.store.GetApp(ctx, "shop-pr-1"); err != nil || strings.Contains(r.stderr, "expired review app") || strings.Contains(r.stderr, "removing") {
			t.Errorf("%v: the sweep ran before the input was refused: %v\n%s", args, err, r.stderr)
		}
	}
}
