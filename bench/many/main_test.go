//go:build unix

package main

import (
	"testing"
	"time"
)

func TestFirstRequestAfter(t *testing.T) {
	trace := []byte(`06:11:59 worker: 59 of 59 new units ready
trace: 06:11:59.700 GET /a 200 OK 1ms
trace: 06:11:59.789 PATCH /b 200 OK 12ms
trace: 06:11:59.810 PUT /c 200 OK 20ms
06:12:00 deployed
`)
	complete := time.Date(2026, 12, 1, 6, 11, 59, 789_400_000, time.Local)
	at, n := firstRequestAfter(trace, complete)
	if want := time.Date(2026, 12, 1, 6, 11, 59, 789_000_000, time.Local); !at.Equal(want) || n != 2 {
		t.Fatalf("first request after %s: %s and %d from there; want %s and 2", complete, at, n, want)
	}
	if at, n := firstRequestAfter(trace, complete.Add(time.Second)); !at.IsZero() || n != 0 {
		t.Fatalf("none after: %s, %d", at, n)
	}
}
