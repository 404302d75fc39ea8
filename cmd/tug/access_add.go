package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// accessAddOptions are `tug access add`.
type accessAddOptions struct {
	IO     *cli.IOStreams
	Target func() (*app.Store, error)

	Subject string
	Role    string
	Output  cli.OutputOptions

	level access.Level
}

func newAccessAddCmd(f *cli.Factory, runF func(context.Context, *accessAddOptions) error) *cobra.Command {
	o := &accessAddOptions{IO: f.IOStreams, Target: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "add SUBJECT --role LEVEL",
		Annotations: atLevel(access.Admin, argsAre(argSubject)),
		Short:       "Grant a user, group or service account a level in the namespace",
		Long: `Grant SUBJECT a level (viewer, developer, operator, admin) in the namespace:
a RoleBinding, labelled as tug's, to the level's Role, which tug makes when
the namespace has none. SUBJECT is a user (NAME), a group (group:NAME), a
service account (serviceaccount:[NAMESPACE:]NAME) or a CI token (ci:NAME).
Granting another level replaces tug's earlier grant of SUBJECT.

The API server lets no one grant more than they hold: tug says so when it
refuses.`,
		Example: `  tug access add alice --role developer
  tug access add group:ops --role operator -n shop
  tug access add serviceaccount:deployer --role developer`,
		Args: cli.ExactArgs("SUBJECT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Subject = args[0]
			if o.Role == "" {
				return inputerr.Errorf("--role is required: viewer, developer, operator or admin")
			}
			l, err := access.ParseLevel(o.Role)
			if err != nil {
				return err
			}
			o.level = l
			if _, err := access.ParseSubject(o.Subject, "default"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAccessAdd(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Role, "role", "", "The level to grant: viewer, developer, operator or admin (required)")
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runAccessAdd(ctx context.Context, o *accessAddOptions) error {
	s, err := o.Target()
	if err != nil {
		return err
	}
	subject, err := access.ParseSubject(o.Subject, s.Namespace)
	if err != nil {
		return err
	}
	g, changed, err := access.Add(ctx, s.Client, s.Namespace, subject, o.level)
	if err != nil {
		return whoRefused(ctx, s, err)
	}
	if g.Warning != "" {
		fmt.Fprintf(o.IO.ErrOut, "warning: %s\n", g.Warning)
	}
	return o.Output.Print(o.IO, g, func() error {
		if !changed {
			_, err := fmt.Fprintf(o.IO.ErrOut, "%s already is %s in namespace %q (rolebinding %s)\n", g.Subject, g.Level, s.Namespace, g.Binding)
			return err
		}
		_, err := fmt.Fprintf(o.IO.ErrOut, "%s is now %s in namespace %q (rolebinding %s)\n", g.Subject, g.Level, s.Namespace, g.Binding)
		return err
	})
}

// whoRefused fills in who was refused a grant, and at what level.
func whoRefused(ctx context.Context, s *app.Store, err error) error {
	var refused *access.RefusedError
	if errors.As(err, &refused) && refused.Escalation {
		refused.User = kube.WhoAmI(ctx, s.Client, "")
		refused.Have, _ = access.CallerLevel(ctx, s.Client, s.Namespace)
	}
	return err
}
