package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/lifecycle"
)

// appExportOptions are `tug app export`.
type appExportOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	App           string
	IncludeConfig bool
	AsManifest    bool
	// Format table, the default, prints YAML as yaml does.
	Format cli.OutputFormat
}

func newAppExportCmd(f *cli.Factory, runF func(context.Context, *appExportOptions) error) *cobra.Command {
	o := &appExportOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "export APP",
		Annotations: atLevel(access.Developer, argsAre(argApp)),
		Short:       "Print the app's deployed release as plain Kubernetes manifests",
		Long: `Print the objects that run the app's deployed release as manifests that
'kubectl apply' accepts without tug: no lock-in. They carry no namespace, so
'kubectl apply -n NS -f -' puts them anywhere.

It is the release that takes the app's requests: the deployed one, or the
new one of a canary or blue-green that sends it every request. The copy
does not take the app's own URL (APP-NAMESPACE under the apps domain stays
this app's); its HTTPRoute keeps the app's domains. A header comment says
which release it is and what is left out.

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
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppExport(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.IncludeConfig, "include-config", false, "Include the config Secret, with its values")
	cmd.Flags().BoolVar(&o.AsManifest, "manifest", false, "Print the app's settings as a tug.yaml instead (docs/manifest.md)")
	cli.AddFormatFlag(cmd, &o.Format)
	return cmd
}

func runAppExport(ctx context.Context, o *appExportOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	if o.AsManifest {
		// --include-config is refused there, once the kubeconfig is read
		return exportManifest(ctx, o.IO, s, o.App, o.IncludeConfig)
	}
	e, err := lifecycle.Export(ctx, deploy.Deps{Client: s.Client, Namespace: s.Namespace}, o.App, o.IncludeConfig)
	if err != nil {
		return err
	}
	if o.Format != cli.OutputYAML && o.Format != cli.OutputTable {
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": e.Objects}
		return cli.OutputOptions{Format: o.Format}.Print(o.IO, list, nil)
	}
	for _, l := range e.Header() {
		fmt.Fprintln(o.IO.Out, l)
	}
	for i, obj := range e.Objects {
		if i > 0 {
			fmt.Fprintln(o.IO.Out, "---")
		}
		if err := cli.WriteYAML(o.IO, obj); err != nil {
			return err
		}
	}
	return nil
}
