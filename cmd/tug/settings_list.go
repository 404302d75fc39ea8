package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
)

// settingsListOptions are a list of a setting of the deployed release
// (app limit list, app healthcheck list, app settings show).
type settingsListOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)
	// Data is what -o json|yaml prints, Table the table.
	Data  func(*app.App, *app.Release) any
	Table func(*app.App, *app.Release) *cli.Table

	App    string
	Output cli.OutputOptions
}

// newSettingsListCmd lists a setting of the deployed release.
func newSettingsListCmd(f *cli.Factory, runF func(context.Context, *settingsListOptions) error, use, short, example string, data func(*app.App, *app.Release) any, table func(*app.App, *app.Release) *cli.Table) *cobra.Command {
	o := &settingsListOptions{IO: f.IOStreams, Store: storeFor(f), Data: data, Table: table}
	cmd := &cobra.Command{
		Use:         use,
		Annotations: atLevel(access.Developer, argsAre(argApp)),
		Aliases:     []string{"ls"},
		Short:       short,
		Example:     example,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runSettingsList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	cli.SetNameKind(cmd, "process")
	return cmd
}

func runSettingsList(ctx context.Context, o *settingsListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	rel, _, err := deploy.BaseRelease(ctx, s, a)
	if err != nil {
		return err
	}
	if rel == nil {
		rel = app.Next(a, nil, "", "")
	}
	return o.Output.Print(o.IO, o.Data(a, rel), func() error { return o.Table(a, rel).Render(o.IO, o.Output.NoHeaders) })
}
