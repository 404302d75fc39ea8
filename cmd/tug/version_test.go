package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/cli"
)

func TestNewOtherCmds(t *testing.T) {
	v, err := parseCmd(t, newVersionCmd, "--client", "-o", "json")
	if err != nil || v == nil || !v.ClientOnly || v.Output.Format != cli.OutputJSON {
		t.Fatalf("version: error %v, options %+v", err, v)
	}
	v, err = parseCmd(t, newVersionCmd, "now")
	wantParseError(t, v, err, `takes no arguments, got "now"`)
	d, err := parseCmd(t, newDoctorCmd, "--all", "-o", "json")
	if err != nil || d == nil || !d.All || d.Output.Format != cli.OutputJSON {
		t.Fatalf("doctor: error %v, options %+v", err, d)
	}
	c, err := parseCmd(t, newCompletionCmd, "zsh")
	if err != nil || c == nil || c.Shell != "zsh" {
		t.Fatalf("completion: error %v, options %+v", err, c)
	}
	c, err = parseCmd(t, newCompletionCmd, "tcsh")
	wantParseError(t, c, err, `unknown shell "tcsh"`)
	o, err := parseCmd(t, newOptionsCmd)
	if err != nil || o == nil || o.Root == nil {
		t.Fatalf("options: error %v, options %+v", err, o)
	}
}

// version --client asks no cluster; without it, a cluster that cannot be
// reached is a warning and the client's version still prints.
func TestRunVersion(t *testing.T) {
	for _, clientOnly := range []bool{true, false} {
		ios, _, out, errOut := cli.TestIOStreams()
		asked := false
		o := &versionOptions{IO: ios, ClientOnly: clientOnly, Output: cli.OutputOptions{Format: cli.OutputTable},
			KubeClient: func() (kubernetes.Interface, error) { asked = true; return nil, errors.New("no kubeconfig") }}
		if err := runVersion(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "Client Version: ") || asked == clientOnly ||
			strings.Contains(errOut.String(), "cannot get the server version") == clientOnly {
			t.Errorf("--client %v: asked %v, stdout %q, stderr %q", clientOnly, asked, out, errOut)
		}
	}
}

// completion writes the script of the tree it is in; options lists the
// tree's persistent flags, hidden ones included.
func TestRunCompletionAndOptions(t *testing.T) {
	root := &cobra.Command{Use: "tug"}
	root.PersistentFlags().String("kubeconfig", "", "Path to the kubeconfig")
	root.PersistentFlags().String("token", "", "Bearer token")
	_ = root.PersistentFlags().MarkHidden("token")
	for shell, want := range map[string]string{"bash": "bash completion V2 for tug", "zsh": "#compdef tug", "fish": "fish completion for tug", "powershell": "powershell completion for tug"} {
		ios, _, out, _ := cli.TestIOStreams()
		if err := runCompletion(context.Background(), &completionOptions{IO: ios, Root: func() *cobra.Command { return root }, Shell: shell}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s script lacks %q", shell, want)
		}
	}
	ios, _, out, _ := cli.TestIOStreams()
	if err := runOptionsCmd(context.Background(), &optionsCmdOptions{IO: ios, Root: func() *cobra.Command { return root }}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "--kubeconfig") || !strings.Contains(out.String(), "--token") {
		t.Errorf("options:\n%s", out)
	}
}
