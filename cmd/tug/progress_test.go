package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestPipedProgressNeverReadsAsSuccessOnFailure: in a CI log (stderr not a
// terminal) a command that fails prints no line that reads as if it had
// done its work, and its progress line says "failed:" (issue 12 #9).
func TestPipedProgressNeverReadsAsSuccessOnFailure(t *testing.T) {
	success := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d (deployed|config set|config unset|rolled back|volume \S+ (un)?bound|\S+ changed)\b`)
	for _, c := range []struct {
		args []string
		line string // the failure line, after the timestamp
	}{
		{[]string{"env", "set", "nosuch", "A=b"}, "failed: setting the config of nosuch"},
		{[]string{"env", "unset", "nosuch", "A"}, "failed: unsetting the config of nosuch"},
		{[]string{"app", "deploy", "nosuch", "--image", "example.com/shop:v2"}, "failed: deploying nosuch"},
		{[]string{"release", "rollback", "nosuch", "v1"}, "failed: rolling back nosuch"},
		{[]string{"app", "tag", "set", "nosuch", "a=b"}, "failed: changing the tags of nosuch"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			p := shopFixture(t)
			r := p.run(t, false, c.args...)
			if r.code == 0 {
				t.Fatalf("want a failure; exit 0, stderr %q", r.stderr)
			}
			if m := success.FindString(r.stderr); m != "" {
				t.Errorf("a failed command printed %q, which reads as success; stderr:\n%s", m, r.stderr)
			}
			if !regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d ` + regexp.QuoteMeta(c.line) + `$`).MatchString(r.stderr) {
				t.Errorf("want the line %q; stderr:\n%s", c.line, r.stderr)
			}
			if !strings.Contains(r.stderr, "error: ") {
				t.Errorf("the error itself is missing; stderr:\n%s", r.stderr)
			}
		})
	}
}
