package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/kube"
)

// versionOptions are `tug version`.
type versionOptions struct {
	IO         *cli.IOStreams
	KubeClient func() (kubernetes.Interface, error)

	ClientOnly bool
	Output     cli.OutputOptions
}

func newVersionCmd(f *cli.Factory, runF func(context.Context, *versionOptions) error) *cobra.Command {
	o := &versionOptions{IO: f.IOStreams, KubeClient: f.KubeClient}
	cmd := &cobra.Command{
		Use:         "version",
		Annotations: atLevel(levelNone, nil),
		Short:       "Show the version of tug and of the cluster",
		Long: `Show tug's version, commit, build date, Go version and platform, and the
Kubernetes version of the cluster when it can be reached. An unreachable
cluster is a warning, not a failure.`,
		Example: `  tug version
  tug version --client -o json`,
		Args:    cli.NoArgs,
		GroupID: "other",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runVersion(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "Show only tug's version; do not contact the cluster")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runVersion(ctx context.Context, o *versionOptions) error {
	res, serverErr := kube.Versions(ctx, o.KubeClient, o.ClientOnly)
	if serverErr != nil {
		fmt.Fprintf(o.IO.ErrOut, "warning: cannot get the server version: %s\n", serverErr)
	}
	return o.Output.Print(o.IO, res, func() error { return printVersion(o.IO, res) })
}

func printVersion(ios *cli.IOStreams, res kube.VersionResult) error {
	c := res.Client
	fmt.Fprintf(ios.Out, "Client Version: %s (commit %s, built %s, %s, %s)\n", c.Version, c.Commit, c.Date, c.GoVersion, c.Platform)
	if s := res.Server; s != nil {
		fmt.Fprintf(ios.Out, "Server Version: %s (%s, %s)\n", s.Version, s.GoVersion, s.Platform)
	}
	return nil
}
