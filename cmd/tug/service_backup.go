package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/service"
)

// serviceBackupOptions are `tug service backup`.
type serviceBackupOptions struct {
	IO   *cli.IOStreams
	Deps func(context.Context) (service.Deps, error)

	Name     string
	File     string
	Schedule service.Schedule
}

func newServiceBackupCmd(f *cli.Factory, runF func(context.Context, *serviceBackupOptions) error) *cobra.Command {
	o := &serviceBackupOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "backup NAME [-f FILE | --schedule CRON [--keep N]]",
		Annotations: atLevel(access.Operator, argsAre(argService)),
		Short:       "Stream a logical dump of a service to stdout or a file",
		Long: `Stream a logical dump of the service (pg_dump's custom format for the postgres
plan) from its unit to stdout, or to -f FILE. Nothing is kept in the
cluster. 'tug service restore NAME -f FILE' puts it back.

With --schedule, dumps are made on that schedule (cron, as the cluster's
time zone, UTC on most) by a CronJob, into a volume of the service that
keeps the newest --keep; 'tug service backups NAME' lists them and
'tug service restore NAME --from DUMP' restores one.`,
		Example: "  tug service backup db > db.dump\n  tug service backup db -f db.dump\n  tug service backup db --schedule '0 3 * * *' --keep 7",
		Args:    cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			if cmd.Flags().Changed("schedule") {
				if o.File != "" {
					return inputerr.Errorf("--schedule writes dumps into the service's backups volume: give it without -f")
				}
				if err := o.Schedule.Validate(); err != nil {
					return err
				}
			} else if cmd.Flags().Changed("keep") {
				return inputerr.Errorf("--keep goes with --schedule")
			} else if o.File == "" && o.IO.IsStdoutTTY() {
				return inputerr.Errorf("a dump is binary: send it to a file with -f FILE or '> FILE'")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceBackup(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.File, "file", "f", "", "Write the dump to FILE (default: stdout)")
	cmd.Flags().StringVar(&o.Schedule.Cron, "schedule", "", "Make dumps on this cron schedule, e.g. '0 3 * * *', into the service's backups volume")
	cmd.Flags().IntVar(&o.Schedule.Keep, "keep", 7, "With --schedule: how many dumps to keep")
	return cmd
}

func runServiceBackup(ctx context.Context, o *serviceBackupOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	if o.Schedule.Cron != "" {
		if err := service.SetSchedule(ctx, d, o.Name, o.Schedule); err != nil {
			return err
		}
		d.Progress.Done(fmt.Sprintf("service %s: a dump on '%s', the newest %d kept; see 'tug service backups %s'", o.Name, o.Schedule.Cron, o.Schedule.Keep, o.Name))
		return nil
	}
	if err := service.Exists(ctx, d, o.Name); err != nil {
		return err
	}
	var w io.Writer = o.IO.Out
	var file *os.File
	if o.File != "" {
		// a new file beside the target, renamed when the dump is whole:
		// a failed dump never leaves a truncated FILE that looks good
		file, err = os.CreateTemp(dirOf(o.File), ".tug-dump-*")
		if err != nil {
			return err
		}
		defer os.Remove(file.Name())
		defer file.Close() // on the error paths; closed once more below
		w = file
	}
	counter := &byteCounter{w: w}
	d.Progress.Update("dumping service " + o.Name)
	if err := service.Backup(ctx, d, o.Name, counter); err != nil {
		d.Progress.Fail("dumping service " + o.Name)
		return err
	}
	if file != nil {
		// on disk before the rename, so a crash right after cannot leave
		// FILE named but empty
		if err := file.Sync(); err != nil {
			return err
		}
		if err := file.Close(); err != nil {
			return err
		}
		if err := os.Rename(file.Name(), o.File); err != nil {
			return err
		}
	}
	d.Progress.Done(fmt.Sprintf("service %s dumped (%d bytes)", o.Name, counter.n))
	return nil
}

type byteCounter struct {
	w io.Writer
	n int64
}

func (c *byteCounter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == os.PathSeparator {
			return path[:i+1]
		}
	}
	return "."
}
