package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/kube"
)

type versionOptions struct {
	ClientOnly bool
	Output     cli.OutputOptions
}

func newVersionCmd(f *cli.Factory) *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show the version of tug and of the cluster",
		Long: `Show tug's version, commit, build date, Go version and platform, and the
Kubernetes version of the cluster when it can be reached. An unreachable
cluster is a warning, not a failure.`,
		Example: `  tug version
  tug version --client -o json`,
		Args:    cli.NoArgs,
		GroupID: "other",
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, serverErr := kube.Versions(cmd.Context(), f.KubeClient, o.ClientOnly)
			if serverErr != nil {
				fmt.Fprintf(f.IOStreams.ErrOut, "warning: cannot get the server version: %s\n", serverErr)
			}
			return o.Output.Print(f.IOStreams, res, func() error { return printVersion(f.IOStreams, res) })
		},
	}
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "Show only tug's version; do not contact the cluster")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func printVersion(ios *cli.IOStreams, res kube.VersionResult) error {
	c := res.Client
	fmt.Fprintf(ios.Out, "Client Version: %s (commit %s, built %s, %s, %s)\n", c.Version, c.Commit, c.Date, c.GoVersion, c.Platform)
	if s := res.Server; s != nil {
		fmt.Fprintf(ios.Out, "Server Version: %s (%s, %s)\n", s.Version, s.GoVersion, s.Platform)
	}
	return nil
}
