// Package text holds the small wording helpers that tug's messages and
// tables share: one-line errors, plurals and ages.
package text

import (
	"fmt"
	"strings"
	"time"
)

// OneLine folds s onto one line: every run of white space, newlines
// included, becomes one space, and the ends are trimmed.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ExcerptLimit is how many bytes of a quoted message Excerpt keeps.
const ExcerptLimit = 400

// Excerpt is OneLine for a message tug quotes from elsewhere (a container
// runtime's, a Kubernetes condition's), cut after ExcerptLimit bytes with
// "...".
func Excerpt(s string) string {
	s = OneLine(s)
	if len(s) > ExcerptLimit {
		s = s[:ExcerptLimit] + "..."
	}
	return s
}

// Plural is one when n is 1 and many otherwise: "1 unit", "2 units".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Age is how long ago t was, in the largest whole unit that reads well in
// a table column: 45s, 12m, 30h (up to two days), 9d. The zero time is "-".
func Age(t time.Time) string { return age(t, time.Now()) }

func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// Size is a byte count as people read it: 512 B, 1.5 KiB, 3.2 MiB, and a
// whole number without decimals (a limit: 64 KiB, 1 MiB).
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0 && n < 1<<20:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
