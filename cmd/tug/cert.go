package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/traffic"
)

func newCertCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cert",
		Short:   "Serve a domain over TLS with a certificate",
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(takesLock(newCertAddCmd(f)), takesLock(newCertRemoveCmd(f)), newCertListCmd(f))
	return cmd
}

func newCertAddCmd(f *cli.Factory) *cobra.Command {
	o := traffic.CertAddOptions{}
	cmd := &cobra.Command{
		Use:         "add APP HOST --cert FILE --key FILE",
		Annotations: argsAre(argApp, argHost),
		Short:       "Add a certificate for one of the app's domains",
		Example:     `  tug cert add shop shop.example.com --cert shop.crt --key shop.key`,
		Long: `Add a certificate and its key for a domain of the app. The pair is checked
first: the key matches the certificate, the certificate names the host, and it
is valid today. It is stored as a kubernetes.io/tls Secret and served through
the Ingress. The key is never printed.`,
		Args: cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Host = args[0], args[1]
			if err := o.Validate(); err != nil {
				return err
			}
			return configure(cmd.Context(), changerFor(cmd, f), o.App, "certificate for "+o.Host+" added", func(d deploy.Deps) (*deploy.Result, error) {
				return traffic.CertAdd(cmd.Context(), d, o, trafficOptions)
			})
		},
	}
	cmd.Flags().StringVar(&o.CertFile, "cert", "", "PEM certificate (with its chain)")
	cmd.Flags().StringVar(&o.KeyFile, "key", "", "PEM private key")
	return cmd
}

func newCertRemoveCmd(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:         "remove APP HOST",
		Annotations: deleting(argApp, argHost),
		Aliases:     []string{"rm", "delete"},
		Short:       "Stop serving a domain over TLS",
		Example:     `  tug cert remove shop shop.example.com`,
		Args:        cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, host := args[0], args[1]
			if err := checkApp(name); err != nil {
				return err
			}
			if err := traffic.ValidateHost(host); err != nil {
				return inputerr.Wrap(err)
			}
			return configure(cmd.Context(), changerFor(cmd, f), name, "certificate for "+strings.ToLower(host)+" removed", func(d deploy.Deps) (*deploy.Result, error) {
				return traffic.CertRemove(cmd.Context(), d, name, host, trafficOptions)
			})
		},
	}
}

func newCertListCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: argsAre(argApp),
		Aliases:     []string{"ls"},
		Short:       "List the app's certificates: hosts, status, expiry",
		Example: `  tug cert list shop
  tug cert list shop -o json`,
		Long: `List the app's certificates: each one's host, where it comes from (a
certificate of your own, 'cert add', or cert-manager with the issuer the
cluster settings named when the domain was added), its status, and its expiry
from the certificate in its Secret. A user's certificate is valid, expired or
not yet valid. One from cert-manager shows its Certificate's Ready condition
as cert-manager wrote it: ready, not ready (with cert-manager's reason), or
pending while cert-manager has said nothing yet.`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, a, err := loadApp(cmd, f, args[0])
			if err != nil {
				return err
			}
			var dyn dynamic.Interface
			if cfg, err := f.RESTConfig(); err == nil {
				if dyn, err = dynamic.NewForConfig(cfg); err != nil {
					return err
				}
			}
			certs, err := traffic.ListCerts(cmd.Context(), s.Client, dyn, s.Namespace, a, time.Now())
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, certs, func() error {
				t := cli.NewTable("host", "status", "source", "sans", "issuer", "expires", "days-left", "reason")
				for _, c := range certs {
					source, expires, days := "cert add", "-", "-"
					if c.Source == "cert-manager" {
						source = c.IssuerRef
					}
					if c.NotAfter != nil {
						expires, days = c.NotAfter.UTC().Format("2006-01-02"), fmt.Sprint(*c.DaysLeft)
					}
					t.AddRow(c.Host, c.Status, source, dash(strings.Join(c.SANs, ",")), dash(c.Issuer), expires, days, dash(certReason(c)))
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

// certReason is what the table says of why a certificate is in its state:
// cert-manager's reason and message, or tug's note.
func certReason(c traffic.Cert) string {
	if r := c.Ready; r != nil {
		msg := r.Reason
		if r.Message != "" {
			msg += ": " + r.Message
		}
		if r.Stale {
			msg += " (about an older spec)"
		}
		return msg
	}
	return c.Message
}
