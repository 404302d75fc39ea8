package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/traffic"
)

func newDomainCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "domain",
		Short: "Route host names to an app",
		Long: `Domains send traffic for a host (and path) to the app's web Service: through
the app's HTTPRoute where the cluster has a Gateway for the app (named by the
cluster settings, or the one Gateway that admits routes from the namespace),
else through one Ingress per app, which an ingress controller in the cluster
serves. A domain with a certificate of its own always goes through the Ingress.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(takesLock(newDomainAddCmd(f)), takesLock(newDomainRemoveCmd(f)), newDomainListCmd(f))
	return cmd
}

func newDomainAddCmd(f *cli.Factory) *cobra.Command {
	o := traffic.DomainAddOptions{}
	var format cli.OutputFormat
	cmd := &cobra.Command{
		Use:         "add APP HOST",
		Annotations: argsAre(argApp, argHost),
		Short:       "Route a host (and path) to the app",
		Example:     "  tug domain add shop shop.example.com\n  tug domain add shop example.com --path /shop --ingress-class nginx\n  tug domain add shop shop.example.com -o json",
		Args:        cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Host = args[0], args[1]
			if err := o.Validate(); err != nil {
				return err
			}
			return configureDomain(cmd, f, o.App, fmt.Sprintf("%s%s routes to %s", o.Host, o.Path, o.App), format, func(d deploy.Deps) (*traffic.DomainResult, error) {
				return traffic.DomainAdd(cmd.Context(), d, o, trafficOptions)
			})
		},
	}
	cli.AddFormatFlag(cmd, &format)
	cmd.Flags().StringVar(&o.IngressClass, "ingress-class", "", "IngressClass to use (default: the cluster's default class)")
	cmd.Flags().StringVar(&o.Path, "path", "/", "URL path prefix that routes to the app")
	return cmd
}

func newDomainRemoveCmd(f *cli.Factory) *cobra.Command {
	var format cli.OutputFormat
	cmd := &cobra.Command{
		Use:         "remove APP HOST",
		Annotations: deleting(argApp, argHost),
		Aliases:     []string{"rm", "delete"},
		Short:       "Stop routing a host to the app (its certificate goes too)",
		Example:     `  tug domain remove shop shop.example.com`,
		Args:        cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, host := args[0], args[1]
			if err := checkApp(name); err != nil {
				return err
			}
			if err := traffic.ValidateHost(host); err != nil {
				return inputerr.Wrap(err)
			}
			return configureDomain(cmd, f, name, strings.ToLower(host)+" removed", format, func(d deploy.Deps) (*traffic.DomainResult, error) {
				return traffic.DomainRemove(cmd.Context(), d, name, host, trafficOptions)
			})
		},
	}
	cli.AddFormatFlag(cmd, &format)
	return cmd
}

// configureDomain is configure for a domain change: with -o json|yaml its
// result goes to stdout (docs/output.md), the done line to stderr as ever.
func configureDomain(cmd *cobra.Command, f *cli.Factory, appName, done string, format cli.OutputFormat, action func(d deploy.Deps) (*traffic.DomainResult, error)) error {
	var out *traffic.DomainResult
	err := configure(cmd.Context(), changerFor(cmd, f), appName, done, func(d deploy.Deps) (*deploy.Result, error) {
		var err error
		if out, err = action(d); err != nil {
			return nil, err
		}
		return out.Rollout, nil
	})
	if err != nil || format == cli.OutputTable {
		return err
	}
	return (cli.OutputOptions{Format: format}).Print(f.IOStreams, out, nil)
}

func newDomainListCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: argsAre(argApp),
		Aliases:     []string{"ls"},
		Short:       "List the app's domains",
		Example:     `  tug domain list shop`,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, a, err := loadApp(cmd, f, args[0])
			if err != nil {
				return err
			}
			domains := a.Domains
			if domains == nil {
				domains = []app.Domain{}
			}
			return o.Print(f.IOStreams, domains, func() error {
				if len(domains) == 0 {
					fmt.Fprintf(f.IOStreams.ErrOut, "app %q has no domains; add one with '%s domain add %s HOST'\n", a.Name, f.CommandName, a.Name)
					return nil
				}
				t := cli.NewTable("host", "path", "tls", "ingress-class")
				for _, d := range domains {
					t.AddRow(d.Host, d.Path, dash(d.TLSSecret), dash(d.IngressClass))
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}
