package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
)

// Each leftover of an unfinished move gets its warning, sanitized, and a
// plain copy none.
func TestWarnMoveCopies(t *testing.T) {
	at := func(name string, cp cluster.Copy) cluster.Searched {
		return cluster.Searched{Cluster: cluster.Cluster{Name: name, Context: name}, Copy: cp}
	}
	for _, tt := range []struct {
		name string
		loc  *cluster.Location
		want []string
	}{
		{"plain", &cluster.Location{Found: true, Cluster: cluster.Cluster{Name: "a"}, Copy: cluster.Copy{Found: true, Pool: "p"},
			Clusters: []cluster.Searched{at("a", cluster.Copy{Found: true})}}, nil},
		{"orphaned target", &cluster.Location{Found: true, Cluster: cluster.Cluster{Name: "b"}, Copy: cluster.Copy{Found: true, Move: cluster.MoveTarget, Pool: "p2", Describe: "moving\x1b[31m"},
			Clusters: []cluster.Searched{at("b", cluster.Copy{Found: true, Move: cluster.MoveTarget})}},
			[]string{`the new copy of a move that never finished (moving`, "'tug app pool set shop p2'"}},
		{"another copy", &cluster.Location{Found: true, Cluster: cluster.Cluster{Name: "a"}, Copy: cluster.Copy{Found: true, Pool: "p"},
			Clusters: []cluster.Searched{at("a", cluster.Copy{Found: true}), at("b", cluster.Copy{Found: true, Move: cluster.MoveTarget, MovePool: "p2", Describe: "half-way"})}},
			[]string{`also has a copy in cluster "b" (half-way)`, "'tug app pool set shop p2' finishes the move"}},
		{"superseded alone", &cluster.Location{Found: true, Cluster: cluster.Cluster{Name: "a"}, Copy: cluster.Copy{Found: true, Move: cluster.MoveSuperseded, Pool: "p"},
			Clusters: []cluster.Searched{at("a", cluster.Copy{Found: true, Move: cluster.MoveSuperseded})}},
			[]string{"the old copy of a move that switched over", "'tug app pool set shop p' makes this copy the app again"}},
	} {
		ios, _, _, errOut := cli.TestIOStreams()
		f := &cli.Factory{IOStreams: ios, CommandName: "tug"}
		warnMoveCopies(f, &cluster.Config{}, "shop", tt.loc)
		got := errOut.String()
		if tt.want == nil && got != "" {
			t.Errorf("%s: warned %q", tt.name, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: warnings %q, want %q", tt.name, got, w)
			}
		}
		if strings.Contains(got, "\x1b") {
			t.Errorf("%s: unsanitized %q", tt.name, got)
		}
	}
}
