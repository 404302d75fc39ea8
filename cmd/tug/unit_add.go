package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

// unitAddOptions are `tug unit add` and `tug unit remove`.
type unitAddOptions struct {
	Changer appChanger
	Rollout rolloutFlags

	App string
	// Process is -p: "" for the app's default process.
	Process string
	// Op is '+' (add) or '-' (remove), N the units.
	Op byte
	N  int32
}

// newUnitAddCmd is `unit add` (add true) or `unit remove`, tsuru's syntax
// for scaling one process by N.
func newUnitAddCmd(f *cli.Factory, runF func(context.Context, *unitAddOptions) error, add bool) *cobra.Command {
	o := &unitAddOptions{}
	use, short, op := "add APP N", "Add N units to a process", byte('+')
	verb, aliases := "add", []string(nil)
	if !add {
		verb, use, short, op = "remove", "remove APP N", "Remove N units from a process", '-'
		aliases = []string{"rm", "delete"}
	}
	annotations := argsAre(argApp, argCount)
	if !add {
		annotations = deleting(argApp, argCount)
	}
	cmd := &cobra.Command{
		Use:         use,
		Annotations: annotations,
		Aliases:     aliases,
		Short:       short,
		Example:     "  tug unit " + verb + " shop 2 -p worker",
		Args:        cli.ExactArgs("APP", "N"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Op = args[0], op
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			n, err := app.ParseUnitCount(args[1])
			if err != nil {
				return err
			}
			o.N = n
			if o.Process != "" {
				if err := app.ValidateProcessName(o.Process); err != nil {
					return err
				}
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runUnitAdd(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Process type (default: the only one, or web)")
	o.Rollout.add(cmd, false, &o.Changer.WaitLock)
	return cmd
}

func runUnitAdd(ctx context.Context, o *unitAddOptions) error {
	return changeUnits(ctx, o.Changer, o.App, &o.Rollout, func(a *app.App) error {
		p := o.Process
		if p == "" {
			var err error
			if p, err = a.DefaultProcess(); err != nil {
				return err
			}
		}
		return a.ApplyScale([]app.ScaleOp{{Process: p, Op: o.Op, N: o.N}})
	})
}
