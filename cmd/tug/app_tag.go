package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func newTagCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "tag", Short: "Place an app's units on nodes with given labels", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	r := &rolloutFlags{}
	set := &cobra.Command{
		Use:         "set APP KEY=VALUE...",
		Annotations: argsAre(argApp),
		Short:       "Require node labels for the app's units: a new release, rolled out",
		Example:     `  tug app tag set shop disk=ssd zone=a`,
		Args:        cli.Args("APP", "KEY=VALUE..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			tags, err := app.ParseTags(args[1:])
			if err != nil {
				return err
			}
			return settingsRoll(cmd.Context(), changerFor(cmd, f), args[0], app.KindTags, "tags", r, func(_ *app.App, rel *app.Release) error {
				rel.SetTags(tags)
				return nil
			})
		},
	}
	r.add(set, true)
	ru := &rolloutFlags{}
	unset := &cobra.Command{
		Use:         "unset APP KEY...",
		Annotations: deleting(argApp),
		Short:       "Drop node label requirements: a new release, rolled out",
		Example:     `  tug app tag unset shop zone`,
		Args:        cli.Args("APP", "KEY..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			if err := app.ValidateTagKeys(args[1:]); err != nil {
				return err
			}
			return settingsRoll(cmd.Context(), changerFor(cmd, f), args[0], app.KindTags, "tags removed", ru, func(a *app.App, rel *app.Release) error {
				return rel.UnsetTags(a.Name, args[1:])
			})
		},
	}
	ru.add(unset, true)
	cmd.AddCommand(set, unset)
	return cmd
}
