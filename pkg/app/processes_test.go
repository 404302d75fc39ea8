package app

import (
	"maps"
	"slices"
	"testing"
)

func TestProcessChangeApply(t *testing.T) {
	base := map[string]string{"web": "./serve", "worker": "./work"}
	tests := []struct {
		name    string
		change  ProcessChange
		base    map[string]string
		want    map[string]string
		removed []string
		err     string
	}{
		{name: "first deploy, nothing named: the image's command as web", want: map[string]string{"web": ""}},
		{name: "nothing named: every type carries over", base: base, want: base},
		{name: "--process worker keeps web", base: map[string]string{"web": ""}, change: ProcessChange{Set: map[string]string{"worker": "sleep 3600"}, From: "--process"},
			want: map[string]string{"web": "", "worker": "sleep 3600"}},
		{name: "--process changes one command", base: base, change: ProcessChange{Set: map[string]string{"web": "./serve2"}},
			want: map[string]string{"web": "./serve2", "worker": "./work"}},
		{name: "a Procfile is the whole list", base: base, change: ProcessChange{Set: map[string]string{"web": "./serve"}, Complete: true},
			want: map[string]string{"web": "./serve"}, removed: []string{"worker"}},
		{name: "--remove-process", base: base, change: ProcessChange{Remove: []string{"worker"}}, want: map[string]string{"web": "./serve"}, removed: []string{"worker"}},
		{name: "--remove-process of no such type", base: base, change: ProcessChange{Remove: []string{"clock"}}, err: `--remove-process clock: the app has no process "clock" (it has web, worker)`},
		{name: "set and removed", base: base, change: ProcessChange{Set: map[string]string{"worker": "x"}, Remove: []string{"worker"}, From: "--process"}, err: `process "worker" is both set (--process) and removed`},
		{name: "nothing left", base: map[string]string{"web": ""}, change: ProcessChange{Remove: []string{"web"}}, err: "would leave the app no process to run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, removed, err := tt.change.Apply(tt.base)
			wantErr(t, err, tt.err, true)
			if err != nil {
				return
			}
			if !maps.Equal(got, tt.want) || !slices.Equal(removed, tt.removed) {
				t.Errorf("Apply = %q, removed %q; want %q, removed %q", got, removed, tt.want, tt.removed)
			}
		})
	}
}

func TestGuarded(t *testing.T) {
	a := &App{Processes: map[string]Process{"web": {Replicas: 0}, "worker": {Replicas: 2}, "clock": {Replicas: 1, Stopped: true}},
		Domains: []Domain{{Host: "shop.example.com"}}}
	if got := Guarded(a, []string{"clock", "web", "worker"}); !slices.Equal(got, []string{"web", "worker"}) {
		t.Errorf("Guarded = %q; want web (domains) and worker (units), not the stopped clock", got)
	}
}
