package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/traffic"
	"tug.dev/tug/pkg/usage"
)

// Traffic commands: addresses, domains, certificates, routable,
// maintenance, allowed sources. Each changes the app record and re-applies
// the deployed release (deploy.Configure); none makes a release.

// configure runs a traffic change and reports it.
func configure(cmd *cobra.Command, f *cli.Factory, appName, done string, change func(d deploy.Deps, a *app.App) error) error {
	d, err := deployDeps(cmd, f)
	if err != nil {
		return err
	}
	p := f.Progress()
	d.Progress = p
	res, err := deploy.Configure(cmd.Context(), d, appName, func(a *app.App) error { return change(d, a) }, deploy.Options{Timeout: 5 * time.Minute})
	if err != nil {
		p.Fail("changing app " + appName)
		return err
	}
	if res.Status == app.StatusStaged {
		done += "; it applies at the first deploy"
	}
	p.Done(done)
	return nil
}

// deleteAfter removes a host's TLS Secret once the Ingress no longer
// names it (err is the outcome of that change).
func deleteAfter(cmd *cobra.Command, err error, d deploy.Deps, secret string) error {
	if err != nil || secret == "" {
		return err
	}
	return traffic.DeleteSecret(cmd.Context(), d.Client, d.Namespace, secret)
}

func checkApp(name string) error {
	if err := app.ValidateName(name); err != nil {
		return usage.Wrap(err)
	}
	return nil
}

// ---------------------------------------------------------------- address

func newAppAddressCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:   "address APP",
		Short: "List where the app can be reached",
		Long: `List the addresses of the app's web process: its Service's cluster IP and
in-cluster name, its NodePort on every node, load balancer addresses, and its
domains through the Ingress.`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := loadApp(cmd, f, args[0])
			if err != nil {
				return err
			}
			addrs, err := traffic.Addresses(cmd.Context(), s.Client, s.Namespace, args[0])
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, addrs, func() error {
				if len(addrs) == 0 {
					fmt.Fprintf(f.IOStreams.ErrOut, "app %q has no web process, so no address\n", args[0])
					return nil
				}
				t := cli.NewTable("kind", "address", "note")
				for _, a := range addrs {
					t.AddRow(a.Kind, a.URL, a.Note)
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

// ---------------------------------------------------------------- domains

func newDomainCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "domain",
		Short: "Route host names to an app (one Ingress per app)",
		Long: `Domains are rules of one Ingress per app, all sending traffic to the app's
web Service. An ingress controller must run in the cluster for them to answer;
tug needs none to manage them.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	var class, path string
	add := &cobra.Command{
		Use:     "add APP HOST",
		Short:   "Route a host (and path) to the app",
		Example: "  tug domain add shop shop.example.com\n  tug domain add shop example.com --path /shop --ingress-class nginx",
		Args:    cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, host := args[0], strings.ToLower(args[1])
			if err := checkApp(name); err != nil {
				return err
			}
			if err := traffic.ValidateHost(host); err != nil {
				return usage.Wrap(err)
			}
			if err := traffic.ValidatePath(path); err != nil {
				return usage.Wrap(err)
			}
			return configure(cmd, f, name, fmt.Sprintf("%s%s routes to %s", host, path, name), func(d deploy.Deps, a *app.App) error {
				owner, err := traffic.HostOwner(cmd.Context(), d.Client, d.Namespace, a.Name, host)
				if err != nil {
					return err
				}
				if owner != "" {
					return fmt.Errorf("host %s already routes to app %q; remove it there first ('tug domain remove %s %s')", host, owner, owner, host)
				}
				return traffic.AddDomain(a, app.Domain{Host: host, Path: path, IngressClass: class})
			})
		},
	}
	add.Flags().StringVar(&class, "ingress-class", "", "IngressClass to use (default: the cluster's default class)")
	add.Flags().StringVar(&path, "path", "/", "URL path prefix that routes to the app")

	remove := &cobra.Command{
		Use:     "remove APP HOST",
		Aliases: []string{"rm"},
		Short:   "Stop routing a host to the app (its certificate goes too)",
		Args:    cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, host := args[0], strings.ToLower(args[1])
			if err := checkApp(name); err != nil {
				return err
			}
			var secret string
			var deps deploy.Deps
			err := configure(cmd, f, name, host+" removed", func(d deploy.Deps, a *app.App) error {
				var err error
				deps = d
				secret, err = traffic.RemoveDomain(a, host)
				return err
			})
			return deleteAfter(cmd, err, deps, secret)
		},
	}
	o := &cli.OutputOptions{}
	list := &cobra.Command{
		Use:     "list APP",
		Aliases: []string{"ls"},
		Short:   "List the app's domains",
		Args:    cli.ExactArgs("APP"),
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
	cli.AddOutputFlags(list, o)
	cmd.AddCommand(add, remove, list)
	return cmd
}

// ---------------------------------------------------------------- certificates

func newCertCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cert",
		Short:   "Serve a domain over TLS with a certificate",
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	var certFile, keyFile string
	add := &cobra.Command{
		Use:   "add APP HOST --cert FILE --key FILE",
		Short: "Add a certificate for one of the app's domains",
		Long: `Add a certificate and its key for a domain of the app. The pair is checked
first: the key matches the certificate, the certificate names the host, and it
is valid today. It is stored as a kubernetes.io/tls Secret and served through
the Ingress. The key is never printed.`,
		Args: cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, host := args[0], strings.ToLower(args[1])
			if err := checkApp(name); err != nil {
				return err
			}
			if certFile == "" || keyFile == "" {
				return usage.Errorf("give both --cert FILE and --key FILE")
			}
			certPEM, err := readFileArg("--cert", certFile)
			if err != nil {
				return err
			}
			keyPEM, err := readFileArg("--key", keyFile)
			if err != nil {
				return err
			}
			if _, err := traffic.CheckPair(certPEM, keyPEM, host, time.Now()); err != nil {
				return usage.Wrap(err)
			}
			secret := ""
			return configure(cmd, f, name, "certificate for "+host+" added", func(d deploy.Deps, a *app.App) error {
				found := false
				for i := range a.Domains {
					if a.Domains[i].Host == host {
						found = true
						if secret == "" {
							secret = deploy.TLSSecretName(a.Name, host)
							if err := traffic.StoreCert(cmd.Context(), d.Client, d.Namespace, a.Name, secret, host, certPEM, keyPEM); err != nil {
								return err
							}
						}
						a.Domains[i].TLSSecret = secret
					}
				}
				if !found {
					return fmt.Errorf("app %q has no domain %s; add it first with 'tug domain add %s %s'", a.Name, host, a.Name, host)
				}
				return nil
			})
		},
	}
	add.Flags().StringVar(&certFile, "cert", "", "PEM certificate (with its chain)")
	add.Flags().StringVar(&keyFile, "key", "", "PEM private key")

	remove := &cobra.Command{
		Use:     "remove APP HOST",
		Aliases: []string{"rm"},
		Short:   "Stop serving a domain over TLS",
		Args:    cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, host := args[0], strings.ToLower(args[1])
			if err := checkApp(name); err != nil {
				return err
			}
			var secret string
			var deps deploy.Deps
			err := configure(cmd, f, name, "certificate for "+host+" removed", func(d deploy.Deps, a *app.App) error {
				deps = d
				for i := range a.Domains {
					if a.Domains[i].Host == host && a.Domains[i].TLSSecret != "" {
						secret = a.Domains[i].TLSSecret
						a.Domains[i].TLSSecret = ""
					}
				}
				if secret == "" {
					return fmt.Errorf("app %q has no certificate for %s", a.Name, host)
				}
				return nil
			})
			return deleteAfter(cmd, err, deps, secret)
		},
	}
	o := &cli.OutputOptions{}
	list := &cobra.Command{
		Use:     "list APP",
		Aliases: []string{"ls"},
		Short:   "List the app's certificates: names, issuer, expiry",
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := loadApp(cmd, f, args[0])
			if err != nil {
				return err
			}
			certs, err := traffic.ListCerts(cmd.Context(), s.Client, s.Namespace, args[0], time.Now())
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, certs, func() error {
				t := cli.NewTable("host", "subject", "sans", "issuer", "expires", "days-left")
				for _, c := range certs {
					t.AddRow(c.Host, c.Subject, strings.Join(c.SANs, ","), c.Issuer, c.NotAfter.UTC().Format("2006-01-02"), fmt.Sprint(c.DaysLeft))
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(list, o)
	cmd.AddCommand(add, remove, list)
	return cmd
}

// ---------------------------------------------------------------- routable, maintenance

func newOnOffCmd(f *cli.Factory, use, short, long string, set func(a *app.App, on bool)) *cobra.Command {
	return &cobra.Command{
		Use:   use + " APP on|off",
		Short: short,
		Long:  long,
		Args:  cli.ExactArgs("APP", "on|off"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkApp(args[0]); err != nil {
				return err
			}
			if args[1] != "on" && args[1] != "off" {
				return usage.Errorf("want on or off, not %q", args[1])
			}
			on := args[1] == "on"
			return configure(cmd, f, args[0], fmt.Sprintf("%s %s for %s", use, args[1], args[0]), func(_ deploy.Deps, a *app.App) error {
				set(a, on)
				return nil
			})
		},
	}
}

func newAppRoutableCmd(f *cli.Factory) *cobra.Command {
	return newOnOffCmd(f, "routable", "Take the app out of traffic (off) or put it back (on)",
		`Off: the app's Service (and so its domains and NodePorts) routes to nothing,
while its units keep running. On: traffic reaches the units again.`,
		func(a *app.App, on bool) { a.Unroutable = !on })
}

func newAppMaintenanceCmd(f *cli.Factory) *cobra.Command {
	return newOnOffCmd(f, "maintenance", "Answer requests with a 503 maintenance page (on) or with the app (off)",
		`On: a small maintenance backend starts and the app's Service switches to it,
so every request (through domains, NodePorts or the cluster IP) gets a 503
"down for maintenance" answer with Retry-After, whatever ingress controller
runs; the app's units keep running. Off: the Service switches back. The page's
image is `+deploy.MaintenanceImage+` (TUG_MAINTENANCE_IMAGE overrides it).`,
		func(a *app.App, on bool) { a.Maintenance = on })
}

// ---------------------------------------------------------------- allowed sources

func newAllowCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "allow",
		Short: "Admit only some source addresses to the app's web units",
		Long: `With allowed sources set, a NetworkPolicy admits traffic to the web units
only from those CIDRs; with none, all sources are admitted. The cluster's
network plugin enforces NetworkPolicies (not every plugin does).`,
		Args: cli.GroupArgs,
		RunE: cli.GroupRunE,
	}
	edit := func(use, short string, add bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " APP CIDR...",
			Short: short,
			Args:  usageArgs(cobra.MinimumNArgs(2)),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := checkApp(args[0]); err != nil {
					return err
				}
				var cidrs []string
				for _, s := range args[1:] {
					c, err := traffic.ParseCIDR(s)
					if err != nil {
						return usage.Wrap(err)
					}
					cidrs = append(cidrs, c)
				}
				return configure(cmd, f, args[0], "allowed sources changed", func(_ deploy.Deps, a *app.App) error {
					for _, c := range cidrs {
						has := slices.Contains(a.Allow, c)
						switch {
						case add && !has:
							a.Allow = append(a.Allow, c)
						case !add && !has:
							return fmt.Errorf("app %q does not allow %s; see 'tug app allow list %s'", a.Name, c, a.Name)
						case !add:
							a.Allow = slices.DeleteFunc(a.Allow, func(x string) bool { return x == c })
						}
					}
					return nil
				})
			},
		}
	}
	o := &cli.OutputOptions{}
	list := &cobra.Command{
		Use:   "list APP",
		Short: "List the allowed sources (none: everyone is admitted)",
		Args:  cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, a, err := loadApp(cmd, f, args[0])
			if err != nil {
				return err
			}
			allow := a.Allow
			if allow == nil {
				allow = []string{}
			}
			return o.Print(f.IOStreams, allow, func() error {
				if len(allow) == 0 {
					fmt.Fprintln(f.IOStreams.ErrOut, "no restriction: every source is admitted")
					return nil
				}
				t := cli.NewTable("cidr")
				for _, c := range allow {
					t.AddRow(c)
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(list, o)
	cmd.AddCommand(edit("add", "Admit these sources", true), edit("remove", "Stop admitting these sources", false), list)
	return cmd
}
