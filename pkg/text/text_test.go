package text

import (
	"strings"
	"testing"
	"time"
)

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"  a\n\tb   c \r\n": "a b c",
		"":                  "",
		"plain":             "plain",
		"x\n\ny":            "x y",
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("x ", 1000)
	if got := OneLine(long); len(got) != 1999 {
		t.Errorf("OneLine must not cut: %d bytes", len(got))
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt("  a\n\tb   c \r\n"); got != "a b c" {
		t.Errorf("Excerpt folds lines: %q", got)
	}
	exact := strings.Repeat("x", ExcerptLimit)
	if got := Excerpt(exact); got != exact {
		t.Errorf("a message of exactly the limit is kept whole: %d bytes", len(got))
	}
	long := Excerpt(strings.Repeat("x", 1000))
	if len(long) != ExcerptLimit+3 || !strings.HasSuffix(long, "...") {
		t.Errorf("long message: %d bytes, %q...", len(long), long[len(long)-5:])
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "units", 1: "unit", 2: "units", -1: "units"} {
		if got := Plural(n, "unit", "units"); got != want {
			t.Errorf("Plural(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ago  time.Duration
		want string
	}{
		{0, "0s"},
		{59 * time.Second, "59s"},
		{time.Minute, "1m"},
		{59*time.Minute + 59*time.Second, "59m"},
		{time.Hour, "1h"},
		{47 * time.Hour, "47h"},
		{48 * time.Hour, "2d"},
		{30 * 24 * time.Hour, "30d"},
	} {
		if got := age(now.Add(-c.ago), now); got != c.want {
			t.Errorf("age(%v ago) = %s, want %s", c.ago, got, c.want)
		}
	}
	if got := age(time.Time{}, now); got != "-" {
		t.Errorf("zero time: %s", got)
	}
	if got := Age(time.Now().Add(-3 * time.Hour)); got != "3h" {
		t.Errorf("Age(3h ago) = %s", got)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 20: "3 MiB", 64 << 10: "64 KiB", 1<<20 + 1<<19: "1.5 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
