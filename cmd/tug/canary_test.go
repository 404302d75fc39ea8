package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
)

// Bad canary and blue-green flags exit 2 before any request (there is no
// kubeconfig: one that got that far would fail about the cluster).
func TestCanaryFlagsExit2BeforeAnyRequest(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--canary", "0%"}, "from 1% to 99%"},
		{[]string{"--canary", "100%"}, "from 1% to 99%"},
		{[]string{"--canary", "lots"}, "from 1% to 99%"},
		{[]string{"--canary-steps", "50,10"}, "must go up"},
		{[]string{"--canary", "60%", "--canary-steps", "20,50"}, "must be below the last of --canary-steps"},
		{[]string{"--canary-steps", "20,50", "--step-interval", "0s"}, "--step-interval must be positive"},
		{[]string{"--step-interval", "1m"}, "--step-interval needs --canary"},
		{[]string{"--canary", "20%", "--step-interval", "1m"}, "--step-interval needs --canary-steps"},
		{[]string{"--strategy", "canary"}, "needs --canary P%"},
		{[]string{"--strategy", "purple"}, `unknown --strategy "purple"`},
		{[]string{"--strategy", "blue-green", "--canary", "20%"}, "switches every request at once"},
		{[]string{"--keep", "1h"}, "--keep needs --canary or --strategy blue-green"},
		{[]string{"--canary", "20%", "--keep", "1h"}, "--keep is for --strategy blue-green"},
		{[]string{"--canary", "20%", "--no-wait"}, "--no-wait and --no-rollback do not apply"},
	} {
		args := append([]string{"app", "deploy", "shop", "--image", "shop:2"}, c.args...)
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := execute(t, nil, args...)
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", r.code, r.stderr, c.want)
			}
		})
	}
	for _, verb := range []string{"promote", "abort"} {
		if r := execute(t, nil, "release", verb, "Bad_Name!"); r.code != cli.ExitUsage {
			t.Errorf("release %s of a bad name: exit %d %q", verb, r.code, r.stderr)
		}
	}
}
