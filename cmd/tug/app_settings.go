package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/render"
)

// settingsLong explains the settings with their defaults and bounds, as
// pkg/app defines them.
func settingsLong() string {
	d := app.RolloutDefaults
	return fmt.Sprintf(`Rollout settings travel with the release, so 'tug release rollback' restores
them; a setting never set is tug's default:

  max-surge        %-5s units a rolling update may start above the count (N or P%%)
  max-unavailable  %-5s units that may be missing during a rolling update (N or P%%)
  grace-period     %-5s between SIGTERM and SIGKILL of a stopping unit (%s to %s);
                         a web unit's %ds stop delay is part of it; the
                         only setting whose change restarts the units
  history          %-5d release records kept (1 to %d); older ones are deleted
                         after each rollout and when it is lowered, never the
                         running one
  deploy-timeout   %-5s how long a rollout may go without progress (%s to %s);
                         a command's --timeout wins over it`,
		d.MaxSurge, d.MaxUnavailable, app.FormatSeconds(d.GracePeriod), app.FormatSeconds(int64(app.MinGracePeriod.Seconds())), app.FormatSeconds(int64(app.MaxGracePeriod.Seconds())),
		render.WebStopDelaySeconds, d.History, app.MaxHistory, app.FormatSeconds(d.DeployTimeout),
		app.FormatSeconds(int64(app.MinDeployTimeout.Seconds())), app.FormatSeconds(int64(app.MaxDeployTimeout.Seconds())))
}

// settingsInPlace says which changes restart units, as deploy.ChangeRollout
// makes them.
const settingsInPlace = `Max surge, max unavailable, history and deploy timeout say how tug rolls out,
not what runs: a change of only those takes effect in place, and no unit
restarts. The deployed release's record gets the new values ('tug release
info' shows when they changed), its Deployments the new strategy with their
pod templates untouched, a lowered history deletes older records at once, and
the next deploy starts from the new values. A rollback to an older release
brings back the settings that release had.

The grace period is part of the units' spec: a change of it, alone or with
others, is a new release of kind settings, rolled out like any other (under
the new pace), which replaces every unit; --timeout, --no-wait and
--no-rollback apply to that rollout. The result says which it was ("units
not restarted"; with -o json, unitsRestarted).`

func newAppSettingsCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "settings",
		Short: "Set, unset and show how an app's releases roll out: pace, grace period, history, deploy timeout",
		Long:  settingsLong(),
		Args:  cli.GroupArgs,
		RunE:  cli.GroupRunE,
	}
	show := newSettingsListCmd(f, nil, "show APP", "Show the app's rollout settings (those the next rollout uses), defaults included",
		"  tug app settings show shop\n  tug app settings show shop -o jsonpath='{.history}'",
		func(_ *app.App, rel *app.Release) any { return rel.Rollout.View() },
		func(_ *app.App, rel *app.Release) *cli.Table {
			v := rel.Rollout.View()
			t := cli.NewTable("setting", "value", "source")
			for i, val := range v.Values() {
				source := "set"
				if slices.Contains(v.Defaults, app.RolloutSettingNames[i]) {
					source = "default"
				}
				t.AddRow(app.RolloutSettingNames[i], val, source)
			}
			return t
		})
	show.Aliases = append(show.Aliases, "list")
	cmd.AddCommand(newSettingsSetCmd(f, nil), newSettingsUnsetCmd(f, nil), show)
	return cmd
}

// settingsSetOptions are `tug app settings set`.
type settingsSetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	app.SetRolloutOptions
	// Message is the release's summary: the settings given, with their values.
	Message string
}

func newSettingsSetCmd(f *cli.Factory, runF func(context.Context, *settingsSetOptions) error) *cobra.Command {
	o := &settingsSetOptions{}
	cmd := &cobra.Command{
		Use:         "set APP [--max-surge N|P%] [--max-unavailable N|P%] [--grace-period D] [--history N] [--deploy-timeout D]",
		Annotations: argsAre(argApp),
		Short:       "Change rollout settings: in place, or a rollout when the grace period changes",
		Long:        settingsLong() + "\n\n" + settingsInPlace,
		Example: `  # in place: no unit restarts
  tug app settings set shop --max-surge 50% --max-unavailable 0 --history 20 --deploy-timeout 15m
  # a settings release: the units restart with the new grace period
  tug app settings set shop --grace-period 60s`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			given := givenSettings(cmd, map[string]string{"max-surge": o.MaxSurge, "max-unavailable": o.MaxUnavailable,
				"grace-period": o.GracePeriod, "history": o.History, "deploy-timeout": o.DeployTimeout})
			for _, g := range given {
				if strings.HasSuffix(g, " ") {
					return inputerr.Errorf("--%s needs a value", strings.TrimSpace(g))
				}
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			o.Message = "settings: " + strings.Join(given, ", ")
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runSettingsSet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	d := app.RolloutDefaults
	cmd.Flags().StringVar(&o.MaxSurge, "max-surge", "", "Units a rolling update may start above the count: `N` or P% (default "+d.MaxSurge+")")
	cmd.Flags().StringVar(&o.MaxUnavailable, "max-unavailable", "", "Units that may be missing during a rolling update: `N` or P% (default "+d.MaxUnavailable+")")
	cmd.Flags().StringVar(&o.GracePeriod, "grace-period", "", "`Duration` a stopping unit gets between SIGTERM and SIGKILL (default "+app.FormatSeconds(d.GracePeriod)+")")
	cmd.Flags().StringVar(&o.History, "history", "", fmt.Sprintf("Release records to keep, `N` from 1 to %d (default %d)", app.MaxHistory, d.History))
	cmd.Flags().StringVar(&o.DeployTimeout, "deploy-timeout", "", "`Duration` a rollout may go without progress (default "+app.FormatSeconds(d.DeployTimeout)+")")
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runSettingsSet(ctx context.Context, o *settingsSetOptions) error {
	return changeRolloutSettings(ctx, o.Changer, o.App, o.Message, &o.Rollout, o.Apply)
}

// givenSettings lists the flags given as "name value", in the order
// settings are shown; a flag given empty ends with a space.
func givenSettings(cmd *cobra.Command, values map[string]string) []string {
	var out []string
	for _, name := range app.RolloutSettingNames {
		if cmd.Flags().Changed(name) {
			out = append(out, name+" "+values[name])
		}
	}
	return out
}

// settingsUnsetOptions are `tug app settings unset`.
type settingsUnsetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	app.UnsetRolloutOptions
	// Message is the release's summary: the settings put back.
	Message string
}

func newSettingsUnsetCmd(f *cli.Factory, runF func(context.Context, *settingsUnsetOptions) error) *cobra.Command {
	o := &settingsUnsetOptions{}
	cmd := &cobra.Command{
		Use:         "unset APP [--max-surge] [--max-unavailable] [--grace-period] [--history] [--deploy-timeout]",
		Annotations: deleting(argApp),
		Short:       "Put rollout settings back to tug's defaults: in place, or a rollout for the grace period",
		Long:        settingsLong() + "\n\n" + settingsInPlace,
		Example: `  tug app settings unset shop --max-surge --max-unavailable
  tug app settings unset shop --grace-period`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			var names []string
			for _, name := range app.RolloutSettingNames {
				if cmd.Flags().Changed(name) {
					names = append(names, name)
				}
			}
			o.Message = "settings: " + strings.Join(names, ", ") + " back to default"
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runSettingsUnset(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	d := app.RolloutDefaults
	cmd.Flags().BoolVar(&o.MaxSurge, "max-surge", false, "Back to "+d.MaxSurge)
	cmd.Flags().BoolVar(&o.MaxUnavailable, "max-unavailable", false, "Back to "+d.MaxUnavailable)
	cmd.Flags().BoolVar(&o.GracePeriod, "grace-period", false, "Back to "+app.FormatSeconds(d.GracePeriod))
	cmd.Flags().BoolVar(&o.History, "history", false, fmt.Sprintf("Back to %d", d.History))
	cmd.Flags().BoolVar(&o.DeployTimeout, "deploy-timeout", false, "Back to "+app.FormatSeconds(d.DeployTimeout))
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runSettingsUnset(ctx context.Context, o *settingsUnsetOptions) error {
	return changeRolloutSettings(ctx, o.Changer, o.App, o.Message, &o.Rollout, o.Apply)
}
