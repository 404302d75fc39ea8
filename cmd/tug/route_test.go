package main

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
)

// TestEveryAppCommandIsRouted: every command whose first argument is APP
// goes to the cluster that holds the app (route.go), without anyone
// remembering to wire it; commands that name no existing app do not.
func TestEveryAppCommandIsRouted(t *testing.T) {
	ios, _, _, _ := cli.TestIOStreams()
	root := newRootCmd(cli.NewFactory(ios, "tug"))
	var routed, all []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c.CommandPath())
		if c.Annotations[annotationRouted] != "" {
			routed = append(routed, c.CommandPath())
		}
		if takesApp(c) && c.Annotations[annotationRouted] == "" {
			t.Errorf("%q takes APP but is not routed to the app's cluster", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, want := range []string{
		"tug app deploy", "tug app scale", "tug app info", "tug app remove", "tug app address",
		"tug app pool set", "tug app exec", "tug app export", "tug env set", "tug env get",
		"tug logs", "tug shell", "tug run", "tug unit list", "tug release list", "tug release rollback",
		"tug domain add", "tug cert add", "tug registry set", "tug volume bind",
	} {
		if !slices.Contains(all, want) {
			t.Errorf("no command %q: update this test", want)
		} else if !slices.Contains(routed, want) {
			t.Errorf("%q is not routed", want)
		}
	}
	for _, not := range []string{"tug app create", "tug app list", "tug node list", "tug volume create", "tug cluster add"} {
		if slices.Contains(routed, not) {
			t.Errorf("%q names no existing app but is routed", not)
		}
	}
}
