package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

// accessRemoveOptions are `tug access remove`.
type accessRemoveOptions struct {
	IO       *cli.IOStreams
	Target   func() (*app.Store, error)
	Prompter func() cli.Prompter

	Subject string
	Yes     bool
	Output  cli.OutputOptions
}

func newAccessRemoveCmd(f *cli.Factory, runF func(context.Context, *accessRemoveOptions) error) *cobra.Command {
	o := &accessRemoveOptions{IO: f.IOStreams, Target: storeFor(f), Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:         "remove SUBJECT",
		Annotations: atLevel(access.Admin, argsAre(argSubject)),
		Aliases:     []string{"rm", "delete"},
		Short:       "Revoke a subject's access, or a CI token's identity and all its tokens",
		Long: `Remove tug's grants of SUBJECT in the namespace. For a CI token (ci:NAME) its
service account goes too, so every token it was issued is refused at once.
Bindings of SUBJECT that tug did not make are listed and left alone. Asks
first on a terminal; elsewhere needs --yes.`,
		Example: `  tug access remove alice --yes
  tug access remove ci:deploy --yes`,
		Args: cli.ExactArgs("SUBJECT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Subject = args[0]
			if _, err := access.ParseSubject(o.Subject, "default"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAccessRemove(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Remove without asking")
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runAccessRemove(ctx context.Context, o *accessRemoveOptions) error {
	s, err := o.Target()
	if err != nil {
		return err
	}
	subject, err := access.ParseSubject(o.Subject, s.Namespace)
	if err != nil {
		return err
	}
	plan, err := access.PlanRemove(ctx, s.Client, s.Namespace, subject)
	if err != nil {
		return err
	}
	what := "rolebinding " + strings.Join(plan.Bindings, ", ")
	if plan.ServiceAccount != "" {
		what = fmt.Sprintf("service account %s (every token it was issued) and %s", plan.ServiceAccount, what)
	}
	if err := cli.ConfirmOrFlag(ctx, o.IO, o.Prompter(), o.Yes, cli.Confirmation{
		Action: fmt.Sprintf("remove %s's access in namespace %q: %s", plan.Subject, s.Namespace, what),
	}); err != nil {
		return err
	}
	if err := access.Remove(ctx, s.Client, s.Namespace, plan); err != nil {
		return err
	}
	return o.Output.Print(o.IO, plan, func() error {
		fmt.Fprintf(o.IO.ErrOut, "removed %s's access in namespace %q (%s)\n", cli.Sanitize(plan.Subject), s.Namespace, what)
		if len(plan.LeftAlone) > 0 {
			fmt.Fprintf(o.IO.ErrOut, "left alone, as tug did not make them: %s\n", strings.Join(plan.LeftAlone, ", "))
		}
		return nil
	})
}
