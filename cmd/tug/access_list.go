package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

// accessListOptions are `tug access list`.
type accessListOptions struct {
	IO     *cli.IOStreams
	Target func() (*app.Store, error)

	Output cli.OutputOptions
}

func newAccessListCmd(f *cli.Factory, runF func(context.Context, *accessListOptions) error) *cobra.Command {
	o := &accessListOptions{IO: f.IOStreams, Target: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "list",
		Annotations: atLevel(access.Viewer, nil),
		Aliases:     []string{"ls"},
		Short:       "List who has which level in the namespace",
		Long: `List every RoleBinding's subjects in the namespace with the level it grants:
tug's grants, and bindings tug did not make (marked "not tug's", with the
role they bind), which tug shows and never changes. The admins listed are
who can grant a level.`,
		Example: `  tug access list
  tug access list -n shop -o json | jq '.[] | select(.level == "admin") | .subject'`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAccessList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runAccessList(ctx context.Context, o *accessListOptions) error {
	s, err := o.Target()
	if err != nil {
		return err
	}
	grants, err := access.List(ctx, s.Client, s.Namespace)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, grants, func() error {
		if len(grants) == 0 {
			_, err := fmt.Fprintf(o.IO.ErrOut, "no one is granted access in namespace %q through a RoleBinding\n", s.Namespace)
			return err
		}
		t := cli.NewTable("subject", "level", "role", "binding", "made by")
		for _, g := range grants {
			by := "tug"
			if !g.Managed {
				by = "not tug's"
			}
			t.AddRow(cli.Sanitize(g.Subject), dash(string(g.Level)), cli.Sanitize(g.Role), g.Binding, by)
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
