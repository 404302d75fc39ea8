package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"tug.dev/tug/pkg/inputerr"
)

// fakeFinder answers per context: a copy, or an error (unreachable).
type fakeFinder struct {
	mu     sync.Mutex
	copies map[string]Copy
	errs   map[string]error
	asked  []string
}

func (f *fakeFinder) find(_ context.Context, kubeContext, _ string) (Copy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, kubeContext)
	if err := f.errs[kubeContext]; err != nil {
		return Copy{}, err
	}
	c, ok := f.copies[kubeContext]
	if !ok {
		return Copy{Namespace: "ns-" + kubeContext}, nil
	}
	c.Found = true
	return c, nil
}

func threeClusters() *Config {
	return &Config{Clusters: []Cluster{
		{Name: "a", Context: "ctx-a", Pools: []string{"pa"}, Default: true},
		{Name: "b", Context: "ctx-b", Pools: []string{"pb"}},
		{Name: "dead", Context: "ctx-dead", Pools: []string{"pd"}},
	}}
}

func TestLocate(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:1: connection refused")
	for _, tc := range []struct {
		name      string
		copies    map[string]Copy
		errs      map[string]error
		want      string // cluster name, "" for not found
		ambiguous bool
		// incomplete: only one side of a move was found and another
		// cluster was silent, so Locate must not guess.
		incomplete bool
		others     int
		orphaned   bool // a move's target whose source no cluster holds
	}{
		{name: "nowhere", want: ""},
		{name: "only in b", copies: map[string]Copy{"ctx-b": {Pool: "pb"}}, want: "b"},
		{name: "in b, dead unreachable", copies: map[string]Copy{"ctx-b": {}}, errs: map[string]error{"ctx-dead": down}, want: "b"},
		{name: "two unmarked copies", copies: map[string]Copy{"ctx-a": {}, "ctx-b": {}}, ambiguous: true},
		{name: "move under way: the source serves", copies: map[string]Copy{"ctx-a": {Move: MoveTarget}, "ctx-b": {}}, want: "b", others: 1},
		{name: "move past the switch: the target serves", copies: map[string]Copy{"ctx-a": {Move: MoveTarget}, "ctx-b": {Move: MoveSuperseded}}, want: "a", others: 1},
		{name: "move almost done: the unmarked target", copies: map[string]Copy{"ctx-a": {}, "ctx-b": {Move: MoveSuperseded}}, want: "a", others: 1},
		{name: "only a move's target left", copies: map[string]Copy{"ctx-a": {Move: MoveTarget}}, want: "a", orphaned: true},
		{name: "only a superseded copy left", copies: map[string]Copy{"ctx-b": {Move: MoveSuperseded}}, want: "b"},
		{name: "two targets", copies: map[string]Copy{"ctx-a": {Move: MoveTarget}, "ctx-b": {Move: MoveTarget}}, ambiguous: true},
		{name: "a move's target, the other side silent", copies: map[string]Copy{"ctx-a": {Move: MoveTarget}}, errs: map[string]error{"ctx-dead": down}, incomplete: true},
		{name: "a superseded source, the other side silent", copies: map[string]Copy{"ctx-b": {Move: MoveSuperseded}}, errs: map[string]error{"ctx-dead": down}, incomplete: true},
	} {
		f := &fakeFinder{copies: tc.copies, errs: tc.errs}
		loc, err := Locate(context.Background(), threeClusters(), "shop", f.find)
		if len(f.asked) != 3 {
			t.Errorf("%s: asked %v; want every cluster", tc.name, f.asked)
		}
		if tc.ambiguous {
			var amb *AmbiguousError
			if !inputerr.Is(err) || !errors.As(err, &amb) || !strings.Contains(err.Error(), "--context") {
				t.Errorf("%s: %v; want a usage error asking for --context", tc.name, err)
			}
			continue
		}
		if tc.incomplete {
			var inc *IncompleteError
			if !errors.As(err, &inc) || loc.Found || !strings.Contains(err.Error(), "did not answer") {
				t.Errorf("%s: %v (found=%v); want an IncompleteError", tc.name, err, loc.Found)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := map[bool]string{true: loc.Name}[loc.Found]; got != tc.want {
			t.Errorf("%s: found in %q (found=%v), want %q", tc.name, loc.Name, loc.Found, tc.want)
		}
		if n := len(loc.Others()); n != tc.others {
			t.Errorf("%s: %d other copies, want %d", tc.name, n, tc.others)
		}
		if loc.Orphaned() != tc.orphaned {
			t.Errorf("%s: orphaned %v, want %v", tc.name, loc.Orphaned(), tc.orphaned)
		}
	}
}

// A cluster that never answers does not hold up a command for an app
// another cluster plainly holds: Locate waits AnswerGrace for it, then
// goes on, counting it as unreachable and cancelling its request.
func TestLocateDoesNotWaitForASilentClusterOnceFound(t *testing.T) {
	defer func(g time.Duration) { AnswerGrace = g }(AnswerGrace)
	AnswerGrace = 10 * time.Millisecond
	cancelled := make(chan struct{})
	find := func(ctx context.Context, kubeContext, _ string) (Copy, error) {
		switch kubeContext {
		case "ctx-b":
			return Copy{Found: true, Pool: "pb"}, nil
		case "ctx-dead":
			<-ctx.Done() // a server that never answers
			close(cancelled)
			return Copy{}, ctx.Err()
		}
		return Copy{}, nil
	}
	loc, err := Locate(context.Background(), threeClusters(), "shop", find)
	if err != nil || !loc.Found || loc.Name != "b" {
		t.Fatalf("got %+v, %v; want found in b", loc, err)
	}
	if u := loc.Unreachable(); len(u) != 1 || u[0].Name != "dead" || !strings.Contains(u[0].Err.Error(), "no answer within") {
		t.Errorf("unreachable: %+v", u)
	}
	<-cancelled // the silent cluster's request is cancelled, not leaked
}

func TestLocateNotFoundSaysWhereItLooked(t *testing.T) {
	f := &fakeFinder{errs: map[string]error{"ctx-dead": errors.New("connection refused")}}
	loc, err := Locate(context.Background(), threeClusters(), "shop", f.find)
	if err != nil || loc.Found {
		t.Fatalf("%+v %v", loc, err)
	}
	base := errors.New(`app "shop" not found in namespace "x"`)
	got := loc.NotFound(base)
	for _, want := range []string{`app "shop" not found`, `a (namespace "ns-ctx-a")`, `b (namespace "ns-ctx-b")`, "unreachable", "dead (connection refused)"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if !errors.Is(got, base) {
		t.Error("the command's own error is lost")
	}
	if len(loc.Unreachable()) != 1 {
		t.Errorf("unreachable: %+v", loc.Unreachable())
	}
	// Found: the command's error stays its own.
	f = &fakeFinder{copies: map[string]Copy{"ctx-a": {}}}
	loc, _ = Locate(context.Background(), threeClusters(), "shop", f.find)
	if got := loc.NotFound(base); got != base {
		t.Errorf("found app: NotFound changed the error to %v", got)
	}
	// Nothing configured: no request at all.
	f = &fakeFinder{}
	loc, err = Locate(context.Background(), &Config{}, "shop", f.find)
	if err != nil || loc.Found || len(f.asked) != 0 || loc.NotFound(base) != base {
		t.Errorf("nothing configured: %+v %v asked %v", loc, err, f.asked)
	}
}

func TestMismatch(t *testing.T) {
	c := threeClusters()
	for _, tc := range []struct {
		name, ctx string
		cp        Copy
		want      string
	}{
		{"not there", "ctx-a", Copy{}, ""},
		{"pool of this cluster", "ctx-b", Copy{Found: true, Pool: "pb"}, ""},
		{"no pool", "ctx-b", Copy{Found: true}, ""},
		{"unmapped pool goes to the default", "ctx-b", Copy{Found: true, Pool: "other"}, `cluster "a"`},
		{"pool of another cluster", "ctx-a", Copy{Found: true, Pool: "pb"}, `pool "pb", which tug's cluster map puts in cluster "b"`},
		{"a move's copy", "ctx-a", Copy{Found: true, Pool: "pa", Describe: "unfinished move"}, "unfinished move"},
	} {
		got := c.Mismatch("shop", tc.ctx, tc.cp)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMoveTo(t *testing.T) {
	c := threeClusters()
	if cl, ok := c.MoveTo("pb", "ctx-a"); !ok || cl.Name != "b" {
		t.Errorf("pb from ctx-a: %+v %v; want a move to b", cl, ok)
	}
	if _, ok := c.MoveTo("pa", "ctx-a"); ok {
		t.Error("pa from ctx-a stays")
	}
	if cl, ok := c.MoveTo("unmapped", "ctx-b"); !ok || cl.Name != "a" {
		t.Errorf("an unmapped pool goes to the default: %+v %v", cl, ok)
	}
	if _, ok := (&Config{}).MoveTo("pb", "x"); ok {
		t.Error("nothing configured: nothing moves")
	}
	if got := c.NameOf("ctx-b"); got != "b" {
		t.Errorf("NameOf(ctx-b) = %q", got)
	}
	if got := c.NameOf("laptop"); got != "laptop" {
		t.Errorf("NameOf(laptop) = %q", got)
	}
}

// Two tug names on one kubeconfig context (Config.Add allows it) are one
// cluster: Locate asks the context once, and its copy is one copy, reported
// under the name that tug's map gives the app's pool, else the first.
func TestLocateAsksASharedContextOnce(t *testing.T) {
	cfg := &Config{Clusters: []Cluster{
		{Name: "cpu", Context: "k", Pools: []string{"web"}},
		{Name: "gpu", Context: "k", Pools: []string{"gpu"}, Default: true},
		{Name: "other", Context: "o", Pools: []string{"batch"}},
	}}
	for _, tc := range []struct {
		pool, want string
	}{
		{"gpu", "gpu"},
		{"web", "cpu"},
		{"", "gpu"},         // no pool: the default's
		{"batch", "cpu"},    // another cluster's pool: the first name
		{"unmapped", "gpu"}, // the default takes it
	} {
		f := &fakeFinder{copies: map[string]Copy{"k": {Pool: tc.pool}}}
		loc, err := Locate(context.Background(), cfg, "shop", f.find)
		if err != nil || !loc.Found || loc.Name != tc.want || loc.Context != "k" {
			t.Errorf("pool %q: %+v, %v; want found in %q", tc.pool, loc, err, tc.want)
			continue
		}
		if len(f.asked) != 2 {
			t.Errorf("pool %q: asked %v; want each context once", tc.pool, f.asked)
		}
		if len(loc.Clusters) != 2 || len(loc.Others()) != 0 {
			t.Errorf("pool %q: searched %+v, others %+v", tc.pool, loc.Clusters, loc.Others())
		}
	}
	// Not found, and unreachable: each context once, under its first name.
	f := &fakeFinder{errs: map[string]error{"k": errors.New("connection refused")}}
	loc, err := Locate(context.Background(), cfg, "shop", f.find)
	if err != nil || loc.Found || len(f.asked) != 2 {
		t.Fatalf("%+v %v asked %v", loc, err, f.asked)
	}
	if u := loc.Unreachable(); len(u) != 1 || u[0].Name != "cpu" {
		t.Errorf("unreachable: %+v", u)
	}
}

// bestCopies keeps only the clusters with the lowest mark, skipping the
// silent and the empty.
func TestBestCopies(t *testing.T) {
	s := func(name string, found bool, mark MoveMark, err error) Searched {
		return Searched{Cluster: Cluster{Name: name}, Copy: Copy{Found: found, Move: mark}, Err: err}
	}
	names := func(at []Searched) string {
		var n []string
		for _, x := range at {
			n = append(n, x.Name)
		}
		return strings.Join(n, ",")
	}
	for _, tt := range []struct {
		name     string
		searched []Searched
		best     MoveMark
		at       string
	}{
		{"none", []Searched{s("a", false, MoveNone, nil), s("b", true, MoveNone, errors.New("down"))}, -1, ""},
		{"unmarked beats a move's target", []Searched{s("a", true, MoveTarget, nil), s("b", true, MoveNone, nil)}, MoveNone, "b"},
		{"target beats superseded", []Searched{s("a", true, MoveSuperseded, nil), s("b", true, MoveTarget, nil)}, MoveTarget, "b"},
		{"equals both kept", []Searched{s("a", true, MoveNone, nil), s("b", false, MoveNone, nil), s("c", true, MoveNone, nil)}, MoveNone, "a,c"},
	} {
		best, at := bestCopies(tt.searched)
		if best != tt.best || names(at) != tt.at {
			t.Errorf("%s: best %d at %q; want %d at %q", tt.name, best, names(at), tt.best, tt.at)
		}
	}
}
