package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/service"
)

// serviceRestoreOptions are `tug service restore`.
type serviceRestoreOptions struct {
	IO       *cli.IOStreams
	Deps     func(context.Context) (service.Deps, error)
	Prompter func() cli.Prompter

	Name string
	File string
	From string
	Yes  bool
	// WaitLock is --wait-lock: a restore takes the service's lock.
	WaitLock time.Duration
	Output   cli.OutputOptions
}

// serviceRestored is what `service restore -o json` prints (docs/output.md).
type serviceRestored struct {
	Service string `json:"service"`
	// File is the dump restored from -f ("-": stdin); Backup the stored
	// one restored with --from.
	File   string `json:"file,omitempty"`
	Backup string `json:"backup,omitempty"`
}

func newServiceRestoreCmd(f *cli.Factory, runF func(context.Context, *serviceRestoreOptions) error) *cobra.Command {
	o := &serviceRestoreOptions{IO: f.IOStreams, Deps: serviceDepsFor(f), Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:         "restore NAME [-f FILE | --from DUMP]",
		Annotations: atLevel(access.Operator, argsAre(argService)),
		Short:       "Restore a service from a dump made by 'service backup'",
		Long: `Restore a service from a dump made by 'tug service backup': what the dump
holds replaces what the database holds (its tables are dropped and made
again). --from DUMP restores a dump of the scheduled backups ('tug service
backups NAME'). Asks first on a terminal; elsewhere needs --yes.`,
		Example: "  tug service restore db -f db.dump --yes\n  tug service restore db --from 20261207T030000Z.dump --yes",
		Args:    cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			if (o.File == "") == (o.From == "") {
				return inputerr.Errorf("give the dump with -f FILE (- for stdin), or --from DUMP of the scheduled backups")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceRestore(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.File, "file", "f", "", "The dump, - for stdin (required)")
	cmd.Flags().StringVar(&o.From, "from", "", "A dump of the scheduled backups (see 'tug service backups')")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Restore without asking")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return takesLock(cmd, &o.WaitLock)
}

// locked runs the restore under the service's lock: a restore does not
// run beside a rotate, a backup schedule's change or a remove of the
// service.
func (o *serviceRestoreOptions) locked(ctx context.Context, d service.Deps, restore func(context.Context) error) error {
	d.WaitLock = o.WaitLock
	ctx, unlock, err := d.Hold(ctx, o.Name)
	if err != nil {
		return err
	}
	defer unlock()
	return restore(ctx)
}

func runServiceRestore(ctx context.Context, o *serviceRestoreOptions) error {
	if o.From != "" {
		return runServiceRestoreFrom(ctx, o)
	}
	var in io.Reader = o.IO.In
	if o.File != "-" {
		f, err := os.Open(o.File)
		if err != nil {
			return inputerr.Errorf("reading the dump: %v", err)
		}
		defer f.Close()
		in = f
	} else if !o.Yes {
		return inputerr.Errorf("a dump on stdin cannot be confirmed at a prompt: add --yes")
	}
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	if err := service.Exists(ctx, d, o.Name); err != nil {
		return err
	}
	if err := cli.ConfirmOrFlag(ctx, o.IO, o.Prompter(), o.Yes, cli.Confirmation{
		Action: fmt.Sprintf("replace what service %q holds with the dump %s", o.Name, o.File),
	}); err != nil {
		return err
	}
	err = o.locked(ctx, d, func(ctx context.Context) error {
		d.Progress.Update("restoring service " + o.Name)
		return service.Restore(ctx, d, o.Name, in)
	})
	if err != nil {
		d.Progress.Fail("restoring service " + o.Name)
		return err
	}
	d.Progress.Done(fmt.Sprintf("service %s restored from %s", o.Name, o.File))
	return o.print(serviceRestored{Service: o.Name, File: o.File})
}

// print writes -o json|yaml's shape; the table form said it on stderr.
func (o *serviceRestoreOptions) print(r serviceRestored) error {
	if o.Output.Format == cli.OutputTable || o.Output.Format == "" {
		return nil
	}
	return o.Output.Print(o.IO, r, nil)
}

func runServiceRestoreFrom(ctx context.Context, o *serviceRestoreOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	if err := service.Exists(ctx, d, o.Name); err != nil {
		return err
	}
	if err := cli.ConfirmOrFlag(ctx, o.IO, o.Prompter(), o.Yes, cli.Confirmation{
		Action: fmt.Sprintf("replace what service %q holds with its backup %s", o.Name, o.From),
	}); err != nil {
		return err
	}
	err = o.locked(ctx, d, func(ctx context.Context) error {
		d.Progress.Update("restoring service " + o.Name + " from " + o.From)
		return service.RestoreFrom(ctx, d, o.Name, o.From)
	})
	if err != nil {
		d.Progress.Fail("restoring service " + o.Name)
		return err
	}
	d.Progress.Done(fmt.Sprintf("service %s restored from its backup %s", o.Name, o.From))
	return o.print(serviceRestored{Service: o.Name, Backup: o.From})
}
