package cli

import (
	"strings"
	"testing"
	"time"
)

func TestLineProgressWritesTimestampedLinesWithoutRepeats(t *testing.T) {
	ios, _, out, errOut := TestIOStreams()
	p := NewProgress(ios).(*lineProgress)
	p.now = func() time.Time { return time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC) }
	p.Update("waiting for 3 units")
	p.Update("waiting for 3 units")
	p.Update("waiting for 2 units")
	p.Done("deployed release 4")
	p.Fail("deploy failed")
	p.Update("deploying shop")
	p.Fail("")
	p.Fail("config set shop")
	want := "15:04:05 waiting for 3 units\n15:04:05 waiting for 2 units\n15:04:05 deployed release 4\n15:04:05 deploy failed\n" +
		"15:04:05 deploying shop\n15:04:05 failed: deploying shop\n15:04:05 failed: config set shop\n"
	if errOut.String() != want {
		t.Errorf("got %q, want %q", errOut.String(), want)
	}
	if out.Len() != 0 {
		t.Errorf("progress must not write to stdout, got %q", out.String())
	}
}

func TestSpinnerOnTerminal(t *testing.T) {
	ios, _, _, errOut := TestIOStreams()
	ios.SetStderrTTY(true)
	ios.SetColorDisabled(true)
	p := NewProgress(ios).(*spinner)
	p.interval = time.Millisecond
	p.Update("pulling image")
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Wait until the goroutine has redrawn at least once.
		p.mu.Lock()
		frame := p.frame
		p.mu.Unlock()
		if frame > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.Done("image pulled")
	p.Update("starting")
	p.Fail("")
	got := errOut.String()
	if !strings.Contains(got, "\r\x1b[K✓ image pulled\n") {
		t.Errorf("missing done line in %q", got)
	}
	if !strings.HasSuffix(got, "\r\x1b[K✗ starting\n") {
		t.Errorf("fail with no message should repeat the step; got %q", got)
	}
	if strings.Count(got, "pulling image") < 2 {
		t.Errorf("spinner never redrew: %q", got)
	}
	if p.stop != nil {
		t.Error("spinner goroutine still registered after Fail")
	}
}
