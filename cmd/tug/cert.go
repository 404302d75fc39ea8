package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"tug.dev/tug/pkg/app"
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
	cmd.AddCommand(newCertAddCmd(f, nil), newCertRemoveCmd(f, nil), newCertListCmd(f, nil))
	return cmd
}

// certAddOptions are `tug cert add`.
type certAddOptions struct {
	Changer appChanger
	traffic.CertAddOptions
}

func newCertAddCmd(f *cli.Factory, runF func(context.Context, *certAddOptions) error) *cobra.Command {
	o := &certAddOptions{}
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
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runCertAdd(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	takesLock(cmd, &o.Changer.WaitLock)
	cmd.Flags().StringVar(&o.CertFile, "cert", "", "PEM certificate (with its chain)")
	cmd.Flags().StringVar(&o.KeyFile, "key", "", "PEM private key")
	return cmd
}

func runCertAdd(ctx context.Context, o *certAddOptions) error {
	return changeTraffic(ctx, o.Changer, o.App, "certificate for "+o.Host+" added", func(d deploy.Deps) (*deploy.Result, error) {
		return traffic.CertAdd(ctx, d, o.CertAddOptions, trafficOptions)
	})
}

// certRemoveOptions are `tug cert remove`.
type certRemoveOptions struct {
	Changer appChanger

	App  string
	Host string
}

func newCertRemoveCmd(f *cli.Factory, runF func(context.Context, *certRemoveOptions) error) *cobra.Command {
	o := &certRemoveOptions{}
	cmd := &cobra.Command{
		Use:         "remove APP HOST",
		Annotations: deleting(argApp, argHost),
		Aliases:     []string{"rm", "delete"},
		Short:       "Stop serving a domain over TLS",
		Example:     `  tug cert remove shop shop.example.com`,
		Args:        cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Host = args[0], args[1]
			if err := checkApp(o.App); err != nil {
				return err
			}
			if err := traffic.ValidateHost(o.Host); err != nil {
				return inputerr.Wrap(err)
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runCertRemove(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	takesLock(cmd, &o.Changer.WaitLock)
	return cmd
}

func runCertRemove(ctx context.Context, o *certRemoveOptions) error {
	return changeTraffic(ctx, o.Changer, o.App, "certificate for "+strings.ToLower(o.Host)+" removed", func(d deploy.Deps) (*deploy.Result, error) {
		return traffic.CertRemove(ctx, d, o.App, o.Host, trafficOptions)
	})
}

// certListOptions are `tug cert list`.
type certListOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)
	// Dynamic reads cert-manager's Certificates; nil without a REST config.
	Dynamic func() (dynamic.Interface, error)
	Now     func() time.Time

	App    string
	Output cli.OutputOptions
}

func newCertListCmd(f *cli.Factory, runF func(context.Context, *certListOptions) error) *cobra.Command {
	o := &certListOptions{IO: f.IOStreams, Store: storeFor(f), Now: time.Now, Dynamic: func() (dynamic.Interface, error) {
		cfg, err := f.RESTConfig()
		if err != nil {
			return nil, nil
		}
		return dynamic.NewForConfig(cfg)
	}}
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
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runCertList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runCertList(ctx context.Context, o *certListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	dyn, err := o.Dynamic()
	if err != nil {
		return err
	}
	certs, err := traffic.ListCerts(ctx, s.Client, dyn, s.Namespace, a, o.Now())
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, certs, func() error {
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
		return t.Render(o.IO, o.Output.NoHeaders)
	})
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
