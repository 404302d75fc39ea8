package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/service"
)

// serviceCreateOptions are `tug service create`.
type serviceCreateOptions struct {
	IO          *cli.IOStreams
	Deps        func(context.Context) (service.Deps, error)
	CommandName string

	service.CreateOptions
	// URI makes an external service: one tug does not run.
	URI    string
	Output cli.OutputOptions
	// WaitLock is --wait-lock: a create takes the service's lock.
	WaitLock time.Duration
}

func newServiceCreateCmd(f *cli.Factory, runF func(context.Context, *serviceCreateOptions) error) *cobra.Command {
	o := &serviceCreateOptions{IO: f.IOStreams, Deps: serviceDepsFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "create NAME [--plan PLAN [--version V] [--size SIZE] | --uri URI]",
		Annotations: atLevel(access.Operator, argsAre(argNewName)),
		Short:       "Create a service from a plan, and wait until it accepts connections",
		Long: `Create a service from --plan (see 'tug service plans'), and wait until it
accepts connections. Its objects are labelled tug.dev/service=NAME; its
credentials are generated once and kept in a Secret. When it cannot start,
tug says why as a deploy does (the image cannot be pulled, a crash with its
last log lines, no node can take it, its volume cannot be bound) and exits
with a deploy's code; what was made is kept: run the create again once the
cause is fixed (it goes on where it stopped), or remove the service.

With --uri, the service is a database tug does not run (postgres://,
mysql://, redis://): apps bind it the same way; its owner changes its
credentials, given to tug with 'tug service update NAME --uri'.`,
		Example: `  tug service create db --plan postgres
  tug service create reports --plan postgres --version 16 --size 10Gi
  tug service create legacy --uri - < legacy-uri.txt`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			var err error
			if o.URI, err = uriFrom(o.IO.In, o.URI); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceCreate(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Plan, "plan", "", "Plan to make it from (see 'tug service plans') (required)")
	cmd.Flags().StringVar(&o.Version, "version", "", "Version of the plan (default: the plan's)")
	cmd.Flags().StringVar(&o.Size, "size", "", "Size of its volume, e.g. 1Gi (default: the plan's)")
	cmd.Flags().StringVar(&o.URI, "uri", "", "Connection URI of a database tug does not run (instead of --plan); - reads it from stdin, out of ps and the shell's history")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long to wait for it to accept connections")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return takesLock(cmd, &o.WaitLock)
}

func (o *serviceCreateOptions) validate() error {
	if o.URI == "" {
		return o.Validate()
	}
	if o.Plan != "" || o.Version != "" || o.Size != "" {
		return inputerr.Errorf("--uri makes a service tug does not run: give it without --plan, --version and --size")
	}
	if err := service.ValidateName(o.Name); err != nil {
		return err
	}
	_, err := service.ParseURI(o.URI)
	return err
}

func runServiceCreate(ctx context.Context, o *serviceCreateOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	d.WaitLock = o.WaitLock
	var info *service.Info
	if o.URI != "" {
		info, err = service.CreateExternal(ctx, d, o.Name, o.URI)
	} else {
		info, err = service.Create(ctx, d, o.CreateOptions)
	}
	var failed *rollout.Failure
	if errors.As(err, &failed) {
		d.Progress.Fail("service " + o.Name + " did not start")
		for _, l := range failed.Logs {
			fmt.Fprintf(o.IO.ErrOut, "  | %s\n", cli.Sanitize(l))
		}
		return err
	}
	if err != nil {
		d.Progress.Fail("creating service " + o.Name)
		return err
	}
	if info.External {
		d.Progress.Done(fmt.Sprintf("service %s (external, %s) recorded", info.Name, info.Binding.Type))
	} else {
		d.Progress.Done(fmt.Sprintf("service %s (%s %s) accepts connections", info.Name, info.Plan, info.Version))
	}
	return o.Output.Print(o.IO, info, func() error {
		_, err := fmt.Fprintf(o.IO.Out, "service %q is ready; bind it to an app with '%s service bind APP %s'\n", info.Name, o.CommandName, info.Name)
		return err
	})
}
