package app

import (
	"slices"
	"testing"
)

func TestCanaryUnits(t *testing.T) {
	for _, c := range []struct {
		units  int32
		weight int
		want   int32
	}{{3, 25, 1}, {4, 25, 1}, {5, 25, 2}, {10, 10, 1}, {10, 11, 2}, {1, 1, 1}, {2, 99, 2}} {
		if got := CanaryUnits(c.units, c.weight); got != c.want {
			t.Errorf("CanaryUnits(%d, %d%%) = %d, want %d", c.units, c.weight, got, c.want)
		}
	}
}

func TestParseCanaryShares(t *testing.T) {
	for in, want := range map[string]int{"25%": 25, "25": 25, " 1% ": 1, "99%": 99} {
		if got, err := ParsePercent(in); err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"0%", "100%", "-5", "abc", "", "25%%"} {
		if _, err := ParsePercent(bad); err == nil {
			t.Errorf("ParsePercent(%q) should fail", bad)
		}
	}
	if got, err := ParseSteps("10,50"); err != nil || !slices.Equal(got, []int{10, 50}) {
		t.Errorf("ParseSteps(10,50) = %v, %v", got, err)
	}
	for _, bad := range []string{"50,10", "10,10", "10,,50", "10,100"} {
		if _, err := ParseSteps(bad); err == nil {
			t.Errorf("ParseSteps(%q) should fail", bad)
		}
	}
}

func TestTrafficShare(t *testing.T) {
	a := &App{Release: 3}
	if TrafficShare(a, 3) != nil {
		t.Error("one release: no share shown")
	}
	a.Canary = &Canary{Release: 4, Weight: 30}
	if s := TrafficShare(a, 4); s == nil || *s != 30 {
		t.Errorf("canary share = %v", s)
	}
	if s := TrafficShare(a, 3); s == nil || *s != 70 {
		t.Errorf("deployed release's share = %v", s)
	}
	if TrafficShare(a, 2) != nil {
		t.Error("an older release gets no share")
	}
}
