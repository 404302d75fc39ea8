package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/canary"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/route"
)

// Command tests (the first of the two layers, CONVENTIONS 13): argv goes
// into a command built by its newXCmd with a runF that keeps the options,
// the way gh tests its NewCmdX. They prove what the command line parses
// to, and that bad input is refused before the run, with the cluster never
// asked: the test Factory fails a test whose command reaches for a client.

// noClusterFactory is a Factory on test streams whose clients fail the
// test when asked for.
func noClusterFactory(t *testing.T) (*cli.Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	ios, _, out, errOut := cli.TestIOStreams()
	f := cli.NewFactory(ios, "tug")
	f.KubeClientFunc = func() (kubernetes.Interface, error) {
		t.Error("a command test asked for a Kubernetes client")
		return nil, errors.New("no cluster in a command test")
	}
	f.RESTConfigFunc = func() (*rest.Config, error) {
		t.Error("a command test asked for a REST config")
		return nil, errors.New("no cluster in a command test")
	}
	return f, out, errOut
}

// parseCmd runs argv through the command newCmd makes, as the tree would
// (flags, the Args check, RunE), with a runF that keeps the options. It
// returns them, nil when runF was not called, and the command's error.
func parseCmd[O any](t *testing.T, newCmd func(*cli.Factory, func(context.Context, *O) error) *cobra.Command, argv ...string) (*O, error) {
	t.Helper()
	f, _, _ := noClusterFactory(t)
	var got *O
	cmd := newCmd(f, func(_ context.Context, o *O) error {
		got = o
		return nil
	})
	return got, executeCmd(cmd, argv...)
}

// executeCmd runs cmd on argv as the root command would: flag errors are
// usage errors (cli.FlagErrorFunc), nothing is printed.
func executeCmd(cmd *cobra.Command, argv ...string) error {
	if argv == nil {
		argv = []string{}
	}
	cmd.SetArgs(argv)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetFlagErrorFunc(cli.FlagErrorFunc)
	return cmd.ExecuteContext(context.Background())
}

// wantParseError checks a command test's refusal: an error holding want,
// with exit code 2 (a usage error) unless code says otherwise, and no run.
func wantParseError[O any](t *testing.T, got *O, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	if code := exitCode(context.Background(), io.Discard, nil, err); code != cli.ExitUsage {
		t.Errorf("exit code %d, want %d (usage)", code, cli.ExitUsage)
	}
	if got != nil {
		t.Errorf("the run was called on bad input: %+v", got)
	}
}

// failingChanger is an appChanger whose deploy dependencies cannot be
// made: a run test's check that the run reaches for them, and reports
// the failure on stderr without a result on stdout.
func failingChanger(ios *cli.IOStreams, err error) appChanger {
	return appChanger{IO: ios, Progress: func() progress.Reporter { return cli.NewProgress(ios) },
		NewDeps: func(context.Context) (deploy.Deps, error) { return deploy.Deps{}, err }}
}

// fixtureChanger is an appChanger on the printer fixture's fake cluster,
// as deployDeps makes one for user bob.
func fixtureChanger(p *printerFixture, ios *cli.IOStreams) appChanger {
	return appChanger{IO: ios, Progress: func() progress.Reporter { return cli.NewProgress(ios) },
		NewDeps: func(context.Context) (deploy.Deps, error) {
			return deploy.Deps{Client: p.cs, Namespace: "dev", Progress: cli.NewProgress(ios), Holder: lock.Self("bob"),
				Settings: &clustersettings.Stored{Cluster: clustersettings.Settings{}}, Gateways: &route.Finder{},
				SideBySide: canary.Runner{}, Warn: warnOnce(ios)}, nil
		}}
}

// fixtureStore is the printer fixture's store, as a command's options take it.
func fixtureStore(p *printerFixture) func() (*app.Store, error) {
	return func() (*app.Store, error) { return p.store, nil }
}
