package traffic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// The traffic actions: each checks its input (a usage error when it cannot
// work), then changes the app record and re-applies the deployed release
// through deploy.Configure; none makes a release. The record edit of each
// runs again on every retry of the record's update, so it only edits; side
// effects (a certificate's Secret) and costly checks (a LIST) run once, under
// the app's lock (deploy.RecordChange).

func checkApp(name string) error { return inputerr.Wrap(app.ValidateName(name)) }

// DomainAddOptions are `tug domain add`.
type DomainAddOptions struct {
	App, Host string
	// Path is the URL path prefix that routes to the app (default "/").
	Path         string
	IngressClass string
}

// Validate checks the input; host is kept in lower case (an error quotes
// it as given).
func (o *DomainAddOptions) Validate() error {
	if o.Path == "" {
		o.Path = "/"
	}
	if err := checkApp(o.App); err != nil {
		return err
	}
	if err := ValidateHost(o.Host); err != nil {
		return inputerr.Wrap(err)
	}
	o.Host = strings.ToLower(o.Host)
	return inputerr.Wrap(ValidatePath(o.Path))
}

// DomainAdd routes a host (and path) to the app. A host another app of the
// namespace routes is refused: that takes one LIST of Ingresses, made once
// under the lock. When the cluster settings of the app's pool name a
// certificate issuer, a new host takes its certificate from cert-manager
// (see issueFrom); a host that already has a certificate keeps it.
func DomainAdd(ctx context.Context, d deploy.Deps, o DomainAddOptions, opts deploy.Options) (*DomainResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var written recorded
	edit := func(a *app.App) error {
		if err := AddDomain(a, app.Domain{Host: o.Host, Path: o.Path, IngressClass: o.IngressClass}); err != nil {
			return err
		}
		err := issueFrom(a, d.Settings, o.Host)
		written.keep(a)
		return err
	}
	res, err := deploy.ConfigureChange(ctx, d, o.App, deploy.RecordChange{
		Edit: edit,
		Locked: func(ctx context.Context, a *app.App) (func(context.Context), error) {
			// an issuer the cluster cannot use changes nothing
			changed := a.Copy()
			if err := edit(changed); err != nil {
				return nil, err
			}
			if iss := hostIssuer(changed, o.Host); iss != "" {
				if err := d.Routes().CertificatesServed(ctx, iss); err != nil {
					return nil, err
				}
			}
			owner, err := HostOwner(ctx, d.Client, d.Namespace, a.Name, o.Host)
			if err != nil {
				return nil, err
			}
			if owner != "" {
				return nil, fmt.Errorf("host %s already routes to app %q; remove it there first ('tug domain remove %s %s')", o.Host, owner, owner, o.Host)
			}
			if err := route.CheckClaim(ctx, d.Routes(), d.Client, d.Namespace, o.Host, appsDomain(d, a), ownHost(a)); err != nil {
				return nil, err
			}
			return nil, nil
		},
	}, opts)
	if err != nil {
		return nil, err
	}
	var added []app.Domain
	if written.a != nil {
		added = slices.DeleteFunc(hostDomains(written.a, o.Host), func(x app.Domain) bool { return x.Path != o.Path })
	}
	return domainResult(res, &written, o.Host, DomainAdded, added), nil
}

// DomainRemove stops routing every path of host to the app, then deletes
// the host's certificate Secret, if it had one.
func DomainRemove(ctx context.Context, d deploy.Deps, appName, host string, opts deploy.Options) (*DomainResult, error) {
	host = strings.ToLower(host)
	if err := checkApp(appName); err != nil {
		return nil, err
	}
	var secret string
	var issued bool
	var removed []app.Domain
	var written recorded
	res, err := deploy.Configure(ctx, d, appName, func(a *app.App) error {
		var err error
		issued = hostIssuer(a, host) != ""
		removed = hostDomains(a, host)
		secret, err = RemoveDomain(a, host)
		written.keep(a)
		return err
	}, opts)
	res, err = deleteAfter(ctx, d, appName, res, err, secret, issued)
	if err != nil {
		return nil, err
	}
	return domainResult(res, &written, host, DomainRemoved, removed), nil
}

// deleteAfter removes a host's TLS Secret once the record no longer names
// it (err is the outcome of that change); by then its Certificate, if it
// came from an issuer, is gone too, so cert-manager writes it no more. A
// Secret that cert-manager wrote without tug's labels is left to its owner.
func deleteAfter(ctx context.Context, d deploy.Deps, appName string, res *deploy.Result, err error, secret string, issued bool) (*deploy.Result, error) {
	if err != nil || secret == "" {
		return res, err
	}
	err = DeleteSecret(ctx, d.Client, d.Namespace, appName, secret)
	var notOurs *kube.NotOwnedError
	if issued && errors.As(err, &notOurs) {
		err = nil
	}
	return res, err
}

// CertAddOptions are `tug cert add`: a certificate and its key, in PEM
// files, for a domain of the app.
type CertAddOptions struct {
	App, Host         string
	CertFile, KeyFile string
	// Now is when the certificate must be valid (default: now).
	Now time.Time

	certPEM, keyPEM []byte
}

// Validate reads and checks the pair: the key matches the certificate, which
// names the host and is valid now. Every failure is a usage error.
func (o *CertAddOptions) Validate() error {
	o.Host = strings.ToLower(o.Host)
	if err := checkApp(o.App); err != nil {
		return err
	}
	if o.CertFile == "" || o.KeyFile == "" {
		return inputerr.Errorf("give both --cert FILE and --key FILE")
	}
	var err error
	if o.certPEM, err = readFile("--cert", o.CertFile); err != nil {
		return err
	}
	if o.keyPEM, err = readFile("--key", o.KeyFile); err != nil {
		return err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	_, err = CheckPair(o.certPEM, o.keyPEM, o.Host, o.Now)
	return inputerr.Wrap(err)
}

// MaxPEMBytes bounds --cert and --key: a certificate chain and its key
// share one Secret, which Kubernetes caps at 1 MiB.
const MaxPEMBytes = 512 << 10

func readFile(flag, path string) ([]byte, error) {
	return app.ReadFileArgLimit(flag, path, MaxPEMBytes)
}

// CertAdd serves a domain of the app over TLS with a certificate. The pair
// is checked first; its kubernetes.io/tls Secret is written once the app's
// lock is held, and taken back when the record cannot be changed, so a
// failed change leaves no Secret behind. A host whose certificate came
// from an issuer takes the user's instead: its Certificate is deleted
// before the Secret is written, so cert-manager does not write over it.
func CertAdd(ctx context.Context, d deploy.Deps, o CertAddOptions, opts deploy.Options) (*deploy.Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	secret := route.TLSSecretName(o.App, o.Host)
	return deploy.ConfigureChange(ctx, d, o.App, deploy.RecordChange{
		Edit: func(a *app.App) error {
			found := false
			for i := range a.Domains {
				if a.Domains[i].Host == o.Host {
					found = true
					a.Domains[i].TLSSecret, a.Domains[i].CertIssuer = secret, ""
				}
			}
			if !found {
				return fmt.Errorf("app %q has no domain %s; add it first with 'tug domain add %s %s'", a.Name, o.Host, a.Name, o.Host)
			}
			return nil
		},
		Locked: func(ctx context.Context, a *app.App) (func(context.Context), error) {
			var restore func(context.Context)
			if hostIssuer(a, o.Host) != "" {
				var err error
				if restore, err = deleteCertificate(ctx, d, a.Name, route.CertificateName(a.Name, o.Host)); err != nil {
					return nil, err
				}
			}
			undo, err := putCert(ctx, d.Client, d.Namespace, a.Name, secret, o.Host, o.certPEM, o.keyPEM)
			if err != nil {
				if restore != nil {
					restore(ctx)
				}
				return nil, err
			}
			return func(ctx context.Context) {
				undo(ctx)
				if restore != nil {
					restore(ctx)
				}
			}, nil
		},
	}, opts)
}

// CertRemove stops serving a domain over TLS and deletes its Secret.
func CertRemove(ctx context.Context, d deploy.Deps, appName, host string, opts deploy.Options) (*deploy.Result, error) {
	host = strings.ToLower(host)
	if err := checkApp(appName); err != nil {
		return nil, err
	}
	var secret string
	var issued bool
	res, err := deploy.Configure(ctx, d, appName, func(a *app.App) error {
		secret, issued = "", hostIssuer(a, host) != ""
		for i := range a.Domains {
			if a.Domains[i].Host == host && a.Domains[i].TLSSecret != "" {
				secret = a.Domains[i].TLSSecret
				a.Domains[i].TLSSecret, a.Domains[i].CertIssuer = "", ""
			}
		}
		if secret == "" {
			return fmt.Errorf("app %q has no certificate for %s", a.Name, host)
		}
		return nil
	}, opts)
	return deleteAfter(ctx, d, appName, res, err, secret, issued)
}

// Setting is an on/off switch of an app's traffic.
type Setting string

const (
	// Routable off: the Service routes to nothing; the units keep running.
	Routable Setting = "routable"
	// Maintenance on: every request gets a 503 maintenance page.
	Maintenance Setting = "maintenance"
)

// ParseOnOff reads "on" or "off".
func ParseOnOff(s string) (bool, error) {
	if s != "on" && s != "off" {
		return false, inputerr.Errorf("want on or off, not %q", s)
	}
	return s == "on", nil
}

// Set turns a setting of the app on or off.
func Set(ctx context.Context, d deploy.Deps, appName string, s Setting, on bool, opts deploy.Options) (*deploy.Result, error) {
	if err := checkApp(appName); err != nil {
		return nil, err
	}
	if s != Routable && s != Maintenance {
		return nil, fmt.Errorf("unknown setting %q", s)
	}
	// what a request through the router gets once the change is served
	switch {
	case s == Maintenance && on:
		opts.Probe = route.ProbeMaintenance
	case s == Routable && !on:
		opts.Probe = route.ProbeNone // nothing answers
	}
	return deploy.Configure(ctx, d, appName, func(a *app.App) error {
		if s == Routable {
			a.Unroutable = !on
		} else {
			a.Maintenance, a.MaintenanceImage = on, ""
			if on {
				a.MaintenanceImage = d.MaintenanceImage
			}
		}
		return nil
	}, opts)
}

// AllowOptions are `tug app allow add|remove`.
type AllowOptions struct {
	App string
	// Sources are CIDRs or bare IP addresses (taken as /32 or /128).
	Sources []string
	// Remove stops admitting the sources instead of admitting them.
	Remove bool

	cidrs []string
}

// Validate checks the app name and parses the sources.
func (o *AllowOptions) Validate() error {
	if err := checkApp(o.App); err != nil {
		return err
	}
	o.cidrs = o.cidrs[:0]
	for _, s := range o.Sources {
		c, err := ParseCIDR(s)
		if err != nil {
			return inputerr.Wrap(err)
		}
		o.cidrs = append(o.cidrs, c)
	}
	return nil
}

// Allow admits more sources to the app's web units, or stops admitting some.
// Removing a source the app does not allow is an error.
func Allow(ctx context.Context, d deploy.Deps, o AllowOptions, opts deploy.Options) (*deploy.Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	opts.Probe = route.ProbeAllow // what tug gets depends on whether the list admits its own address
	return deploy.Configure(ctx, d, o.App, func(a *app.App) error {
		for _, c := range o.cidrs {
			has := slices.Contains(a.Allow, c)
			switch {
			case !o.Remove && !has:
				a.Allow = append(a.Allow, c)
			case o.Remove && !has:
				return fmt.Errorf("app %q does not allow %s; see 'tug app allow list %s'", a.Name, c, a.Name)
			case o.Remove:
				a.Allow = slices.DeleteFunc(a.Allow, func(x string) bool { return x == c })
			}
		}
		return nil
	}, opts)
}

// appsDomain is the apps domain the cluster settings give the app's pool;
// when they name none or could not be read, the domain of the app's own
// URL (its host past the first label: the wildcard listener's domain a
// found Gateway named it under, or the apps domain of the settings that
// named it), so the apps-domain guards stay on. "" when neither says.
func appsDomain(d deploy.Deps, a *app.App) string {
	if d.Settings != nil {
		if s := d.Settings.For(a.Pool).Get(clustersettings.AppsDomain); s != "" {
			return s
		}
	}
	if _, domain, ok := strings.Cut(ownHost(a), "."); ok {
		return domain
	}
	return ""
}

// ownHost is the app's own URL's host ("" when it has none).
func ownHost(a *app.App) string {
	if a.Route == nil {
		return ""
	}
	return a.Route.Host
}
