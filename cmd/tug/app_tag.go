package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func newTagCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "tag", Short: "Place an app's units on nodes with given labels", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	cmd.AddCommand(newTagSetCmd(f, nil), newTagUnsetCmd(f, nil))
	return cmd
}

// tagSetOptions are `tug app tag set`.
type tagSetOptions struct {
	Changer appChanger
	Rollout rolloutFlags

	App  string
	Tags map[string]string
}

func newTagSetCmd(f *cli.Factory, runF func(context.Context, *tagSetOptions) error) *cobra.Command {
	o := &tagSetOptions{}
	cmd := &cobra.Command{
		Use:         "set APP KEY=VALUE...",
		Annotations: argsAre(argApp),
		Short:       "Require node labels for the app's units: a new release, rolled out",
		Example:     `  tug app tag set shop disk=ssd zone=a`,
		Args:        cli.Args("APP", "KEY=VALUE..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			tags, err := app.ParseTags(args[1:])
			if err != nil {
				return err
			}
			o.Tags = tags
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runTagSet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runTagSet(ctx context.Context, o *tagSetOptions) error {
	return rollOutSettings(ctx, o.Changer, o.App, app.KindTags, "tags", &o.Rollout, func(_ *app.App, rel *app.Release) error {
		rel.SetTags(o.Tags)
		return nil
	})
}

// tagUnsetOptions are `tug app tag unset`.
type tagUnsetOptions struct {
	Changer appChanger
	Rollout rolloutFlags

	App  string
	Keys []string
}

func newTagUnsetCmd(f *cli.Factory, runF func(context.Context, *tagUnsetOptions) error) *cobra.Command {
	o := &tagUnsetOptions{}
	cmd := &cobra.Command{
		Use:         "unset APP KEY...",
		Annotations: deleting(argApp),
		Short:       "Drop node label requirements: a new release, rolled out",
		Example:     `  tug app tag unset shop zone`,
		Args:        cli.Args("APP", "KEY..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Keys = args[0], args[1:]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if err := app.ValidateTagKeys(o.Keys); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runTagUnset(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runTagUnset(ctx context.Context, o *tagUnsetOptions) error {
	return rollOutSettings(ctx, o.Changer, o.App, app.KindTags, "tags removed", &o.Rollout, func(a *app.App, rel *app.Release) error {
		return rel.UnsetTags(a.Name, o.Keys)
	})
}
