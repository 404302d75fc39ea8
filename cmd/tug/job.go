package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
)

func newJobCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Run commands of an app on a schedule",
		Long: `A job runs a command of the app on a cron schedule, in a pod made from the
app's deployed release: its image (by digest once known), its config, the
TUG_* variables, its pool, volumes and pull secret, and the job's own limits
(else those of web, or the first process). Each job is a CronJob
(APP-job-NAME) that every release renders again, so a deploy gives the job the
new image and config and a rollback restores the old ones. Adding, changing or
removing a job changes the deployed release's jobs in place, as Heroku
Scheduler does: no unit restarts, and 'tug release info' lists the change;
jobs can also be
declared in tug.yaml (docs/manifest.md).`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newJobAddCmd(f, nil), newJobListCmd(f, nil), newJobInfoCmd(f, nil), newJobRunCmd(f, nil), newJobLogsCmd(f, nil),
		newJobSuspendCmd(f, nil, true), newJobSuspendCmd(f, nil, false), newJobRemoveCmd(f, nil))
	return cmd
}

// jobCommandArgs checks APP NAME -- COMMAND...
func jobCommandArgs(cmd *cobra.Command, args []string) error {
	dash := cmd.ArgsLenAtDash()
	synopsis := cmd.CommandPath() + " APP NAME --schedule CRON -- COMMAND [ARGS...]"
	switch {
	case len(args) < 2 || dash >= 0 && dash < 2:
		return inputerr.Errorf("missing APP and NAME: %s", synopsis)
	case dash < 0 && len(args) == 2:
		return inputerr.Errorf("missing command: put it after '--': %s", synopsis)
	case dash < 0 || dash > 2:
		return inputerr.Errorf("put the command after '--': %s", synopsis)
	case len(args) == dash:
		return inputerr.Errorf("no command after '--': %s", synopsis)
	}
	return app.ValidateName(args[0])
}

// jobArgs checks APP NAME.
func jobArgs(cmd *cobra.Command, args []string) error {
	if err := cli.ExactArgs("APP", "NAME")(cmd, args); err != nil {
		return err
	}
	if err := app.ValidateName(args[0]); err != nil {
		return err
	}
	return app.ValidateJobName(args[1])
}

func isNoChange(err error) bool { return errors.Is(err, deploy.ErrNoChange) }

// jobsLine is app info's line of jobs: "report (0 6 * * *), ping (@hourly, suspended)".
func jobsLine(jobs []app.JobSummary) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		what := j.Schedule
		if j.TimeZone != "" {
			what += " " + j.TimeZone
		}
		if j.Suspended {
			what += ", suspended"
		}
		parts[i] = fmt.Sprintf("%s (%s)", j.Name, what)
	}
	return strings.Join(parts, ", ")
}
