package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/lifecycle"
)

func newAppExportCmd(f *cli.Factory) *cobra.Command {
	var includeConfig, asManifest bool
	format := cli.OutputYAML
	cmd := &cobra.Command{
		Use:         "export APP",
		Annotations: argsAre(argApp),
		Short:       "Print the app's deployed release as plain Kubernetes manifests",
		Long: `Print the objects that run the app's deployed release as manifests that
'kubectl apply' accepts without tug: no lock-in. They carry no namespace, so
'kubectl apply -n NS -f -' puts them anywhere.

Config values are left out unless --include-config; the Deployments then
treat the config Secret as optional, and run without it until it is copied.

--manifest prints the app's processes (command, units, limits, healthcheck),
release-phase command, rollout settings and jobs as a tug.yaml instead: 'tug
app deploy APP --image IMAGE' with that file beside it changes none of them
(docs/manifest.md). Config is never part of it.`,
		Example: `  tug app export shop | kubectl apply -n staging -f -
  tug app export shop --include-config -o json
  tug app export shop --manifest > tug.yaml`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			if asManifest {
				return exportManifest(cmd, f, s, args[0], includeConfig)
			}
			objs, err := lifecycle.Export(cmd.Context(), s, args[0], includeConfig)
			if err != nil {
				return err
			}
			if format != cli.OutputYAML && format != cli.OutputTable {
				list := map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
				return cli.OutputOptions{Format: format}.Print(f.IOStreams, list, nil)
			}
			for i, o := range objs {
				if i > 0 {
					fmt.Fprintln(f.IOStreams.Out, "---")
				}
				if err := cli.WriteYAML(f.IOStreams, o); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&includeConfig, "include-config", false, "Include the config Secret, with its values")
	cmd.Flags().BoolVar(&asManifest, "manifest", false, "Print the app's settings as a tug.yaml instead (docs/manifest.md)")
	cli.AddFormatFlag(cmd, &format)
	return cmd
}
