package app

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

func TestParseScale(t *testing.T) {
	tests := []struct {
		args    []string
		want    []ScaleOp
		wantErr string
	}{
		{args: []string{"web=3"}, want: []ScaleOp{{"web", '=', 3}}},
		{args: []string{"web+1", "worker-2"}, want: []ScaleOp{{"web", '+', 1}, {"worker", '-', 2}}},
		{args: []string{"worker2=0"}, want: []ScaleOp{{"worker2", '=', 0}}},
		{args: []string{"my-worker+10"}, wantErr: `invalid scale "my-worker+10"`},
		{args: nil, wantErr: "nothing to scale"},
		{args: []string{"web"}, wantErr: `invalid scale "web"`},
		{args: []string{"web="}, wantErr: `invalid scale "web="`},
		{args: []string{"=3"}, wantErr: `invalid scale "=3"`},
		{args: []string{"web=-1"}, wantErr: "cannot be negative"},
		{args: []string{"web=abc"}, wantErr: `"abc" is not a unit count`},
		{args: []string{"web=10001"}, wantErr: "from 0 to 10000"},
		{args: []string{"Web=1"}, wantErr: `invalid process name "Web"`},
		{args: []string{"web=1", "web+1"}, wantErr: `process "web" is scaled twice`},
	}
	for _, tt := range tests {
		got, err := ParseScale(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseScale(%q) error = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseScale(%q) = %v, %v; want %v", tt.args, got, err, tt.want)
		}
	}
}

func TestApplyScale(t *testing.T) {
	base := func() *App {
		return &App{Name: "shop", Processes: map[string]Process{
			"web":    {Replicas: 2},
			"worker": {Replicas: 3, Stopped: true},
			"auto":   {Replicas: 1, Autoscale: &Autoscale{Min: 1, Max: 4, CPUPercent: 80}},
		}}
	}
	a := base()
	if err := a.ApplyScale([]ScaleOp{{"web", '+', 2}, {"worker", '-', 1}}); err != nil {
		t.Fatal(err)
	}
	if a.Processes["web"].Units() != 4 || a.Processes["worker"].Units() != 2 || a.Processes["worker"].Stopped {
		t.Errorf("after scale: %+v (scaling a stopped process starts it)", a.Processes)
	}

	for _, tt := range []struct {
		ops     []ScaleOp
		wantErr string
	}{
		{[]ScaleOp{{"web", '=', 5}, {"nope", '=', 1}}, `app "shop" has no process "nope"; its processes are web, auto, worker`},
		{[]ScaleOp{{"web", '=', 5}, {"auto", '=', 2}}, `autoscales between 1 and 4 units`},
		{[]ScaleOp{{"web", '-', 3}}, `process "web" has 2 units; cannot remove 3`},
	} {
		a := base()
		err := a.ApplyScale(tt.ops)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ApplyScale(%v) = %v, want %q", tt.ops, err, tt.wantErr)
		}
		if a.Processes["web"].Replicas != 2 {
			t.Errorf("a refused scale changed web to %d", a.Processes["web"].Replicas)
		}
	}

	var unknown *UnknownProcessError
	err := (&App{Name: "shop"}).ApplyScale([]ScaleOp{{"web", '=', 1}})
	if !errors.As(err, &unknown) || !inputerr.Is(err) || err.Error() != `app "shop" has no processes yet; deploy it first` {
		t.Errorf("scale of an undeployed app = %v", err)
	}
}

func TestDefaultProcess(t *testing.T) {
	tests := []struct {
		procs   []string
		want    string
		wantErr string
	}{
		{[]string{"worker"}, "worker", ""},
		{[]string{"web", "worker"}, "web", ""},
		{[]string{"clock", "worker"}, "", "several processes (clock, worker): choose one with -p"},
		{nil, "", "has no processes yet"},
	}
	for _, tt := range tests {
		a := &App{Name: "shop", Processes: map[string]Process{}}
		for _, p := range tt.procs {
			a.Processes[p] = Process{Replicas: 1}
		}
		got, err := a.DefaultProcess()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("DefaultProcess(%v) error = %v, want %q", tt.procs, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("DefaultProcess(%v) = %q, %v; want %q", tt.procs, got, err, tt.want)
		}
	}
}

func TestProcessUnits(t *testing.T) {
	if (Process{Replicas: 3}).Units() != 3 || (Process{Replicas: 3, Stopped: true}).Units() != 0 {
		t.Error("Units ignores Stopped")
	}
}

// TestApplyScaleCapsRelativeScale (issue 12 item 8): web+N may not take a
// process past MaxUnits, and the refusal is an input error.
func TestApplyScaleCapsRelativeScale(t *testing.T) {
	a := &App{Name: "shop", Processes: map[string]Process{"web": {Replicas: 2}}}
	ops, err := ParseScale([]string{"web+10000"})
	if err != nil {
		t.Fatal(err)
	}
	err = a.ApplyScale(ops)
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "would make 10002, more than the limit of 10000") {
		t.Errorf("web+10000 from 2: %v", err)
	}
	if a.Processes["web"].Replicas != 2 {
		t.Errorf("a refused scale changed web to %d", a.Processes["web"].Replicas)
	}
	if err := a.ApplyScale([]ScaleOp{{"web", '+', 9998}}); err != nil || a.Processes["web"].Replicas != MaxUnits {
		t.Errorf("up to the limit: %v, %d", err, a.Processes["web"].Replicas)
	}
}
