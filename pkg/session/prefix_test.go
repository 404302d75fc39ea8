package session

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestPrefixWriterSplitsLinesAcrossWrites(t *testing.T) {
	var buf bytes.Buffer
	w := NewPrefixWriter(NewSyncWriter(&buf), "u1 | ")
	for _, chunk := range []string{"hel", "lo\nwor", "ld\n\nlast"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got := buf.String(); got != "u1 | hello\nu1 | world\nu1 | \n" {
		t.Fatalf("before Close: %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.HasSuffix(got, "u1 | last\n") {
		t.Fatalf("Close should write the unterminated last line: %q", got)
	}
	_ = w.Close() // nothing more
	if strings.Count(buf.String(), "last") != 1 {
		t.Fatalf("second Close wrote again: %q", buf.String())
	}
}

func TestPrefixWriterBoundsAPartialLine(t *testing.T) {
	var buf bytes.Buffer
	w := NewPrefixWriter(NewSyncWriter(&buf), "p ")
	long := strings.Repeat("x", maxPartialLine+10)
	if _, err := w.Write([]byte(long)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "p xxx") {
		t.Fatalf("a partial line past the bound should be written, got %d bytes", buf.Len())
	}
}

func TestSyncWriterNeverMixesLines(t *testing.T) {
	var buf bytes.Buffer
	out := NewSyncWriter(&buf)
	var wg sync.WaitGroup
	for u := 0; u < 8; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := NewPrefixWriter(out, fmt.Sprintf("unit-%d | ", u))
			for i := 0; i < 500; i++ {
				// odd splits, so lines are assembled from pieces
				line := fmt.Sprintf("line %d of unit %d\n", i, u)
				_, _ = w.Write([]byte(line[:3]))
				_, _ = w.Write([]byte(line[3:]))
			}
		}()
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != 8*500 {
		t.Fatalf("%d lines, want %d", len(got), 8*500)
	}
	for _, l := range got {
		var u1, i, u2 int
		if _, err := fmt.Sscanf(l, "unit-%d | line %d of unit %d", &u1, &i, &u2); err != nil || u1 != u2 {
			t.Fatalf("mixed line %q", l)
		}
	}
}

func TestColorizer(t *testing.T) {
	off := NewColorizer(false)
	if got := off.UnitPrefix("web-1", 8); got != "web-1    | " {
		t.Fatalf("plain prefix %q", got)
	}
	on := NewColorizer(true)
	a, b := on.Paint("a", "x"), on.Paint("b", "x")
	if a == b || !strings.HasPrefix(a, "\x1b[") || !strings.HasSuffix(a, "\x1b[0m") {
		t.Fatalf("two units should get two colours: %q %q", a, b)
	}
	if on.Paint("a", "x") != a {
		t.Fatal("a unit keeps its colour")
	}
}
