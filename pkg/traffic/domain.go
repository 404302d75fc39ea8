// Package traffic holds how requests reach an app: domains and their
// certificates, allowed sources, and the addresses an app answers on. The
// objects themselves are rendered by pkg/render from the app record.
package traffic

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// ValidateHost checks a domain: a DNS name, optionally with a leading "*."
// wildcard, not an IP address. Case does not matter (tug stores hosts in
// lower case); an error quotes the host as given and says what is wrong
// in words.
func ValidateHost(host string) error {
	if host == "" {
		return fmt.Errorf("host is empty")
	}
	if net.ParseIP(host) != nil {
		return fmt.Errorf("invalid host %q: an Ingress routes names, not IP addresses", host)
	}
	name := strings.ToLower(strings.TrimPrefix(host, "*."))
	if why := hostProblem(name); why != "" {
		return fmt.Errorf("invalid host %q: %s", host, why)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("invalid host %q: not a DNS name such as shop.example.com", host) // what hostProblem missed
	}
	if !strings.Contains(name, ".") && name != "localhost" {
		return fmt.Errorf("invalid host %q: a domain needs at least one dot, e.g. shop.example.com", host)
	}
	return nil
}

// hostProblem says what keeps a lower-case name from being a DNS name,
// "" when nothing does.
func hostProblem(name string) string {
	if len(name) > validation.DNS1123SubdomainMaxLength {
		return fmt.Sprintf("it is %d characters long; the limit is %d", len(name), validation.DNS1123SubdomainMaxLength)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			if r == '*' {
				return "a wildcard is allowed only as the first label, as in *.example.com"
			}
			return fmt.Sprintf("%q is not allowed: a host has letters, digits, '-' and '.'", r)
		}
	}
	for _, label := range strings.Split(name, ".") {
		switch {
		case label == "":
			return "it has an empty label (two dots in a row, or a dot at either end)"
		case len(label) > validation.DNS1123LabelMaxLength:
			return fmt.Sprintf("the label %q is %d characters long; the limit is %d", label, len(label), validation.DNS1123LabelMaxLength)
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Sprintf("the label %q starts or ends with '-'; labels start and end with a letter or digit", label)
		}
	}
	return ""
}

// ValidatePath checks an Ingress path: absolute, no spaces.
func ValidatePath(p string) error {
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \t\n?#") {
		return fmt.Errorf("invalid path %q: want an absolute URL path such as / or /api", p)
	}
	return nil
}

// HostOwner finds which other app of the namespace already routes host:
// one LIST of tug's Ingresses. "" when none.
func HostOwner(ctx context.Context, client kubernetes.Interface, namespace, appName, host string) (string, error) {
	list, err := client.NetworkingV1().Ingresses(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if err != nil {
		return "", kube.TranslateError(err)
	}
	for _, ing := range list.Items {
		owner := ing.Labels[kube.LabelApp]
		if owner == appName {
			continue
		}
		for _, r := range ing.Spec.Rules {
			if strings.EqualFold(r.Host, host) {
				return owner, nil
			}
		}
	}
	// Through a Gateway a domain is in an HTTPRoute, not an Ingress: the
	// records say which app has it, whichever way it routes.
	apps, err := (&app.Store{Client: client, Namespace: namespace}).ListApps(ctx)
	if err != nil {
		return "", err
	}
	for _, a := range apps {
		if a.Name == appName {
			continue
		}
		for _, d := range a.Domains {
			if strings.EqualFold(d.Host, host) {
				return a.Name, nil
			}
		}
	}
	return "", nil
}

// AddDomain adds host (with path and ingress class) to the record; adding
// a host twice with the same path is an error.
func AddDomain(a *app.App, d app.Domain) error {
	for _, cur := range a.Domains {
		if strings.EqualFold(cur.Host, d.Host) && cur.Path == d.Path {
			return fmt.Errorf("app %q already has domain %s%s", a.Name, d.Host, d.Path)
		}
		if strings.EqualFold(cur.Host, d.Host) && cur.TLSSecret != "" {
			d.TLSSecret, d.CertIssuer = cur.TLSSecret, cur.CertIssuer
		}
	}
	a.Domains = append(a.Domains, d)
	return nil
}

// RemoveDomain drops every path of host; it returns the TLS Secret the host
// used, if any, for the caller to delete.
func RemoveDomain(a *app.App, host string) (tlsSecret string, err error) {
	n := len(a.Domains)
	a.Domains = slices.DeleteFunc(a.Domains, func(d app.Domain) bool {
		if strings.EqualFold(d.Host, host) {
			tlsSecret = d.TLSSecret
			return true
		}
		return false
	})
	if len(a.Domains) == n {
		return "", fmt.Errorf("app %q has no domain %q; see 'tug domain list %s'", a.Name, host, a.Name)
	}
	return tlsSecret, nil
}

// ParseCIDR checks an allowed source and returns it in canonical form: a
// CIDR, or a bare IP taken as /32 (/128). An IPv4-mapped IPv6 address
// (::ffff:10.0.0.1) is the IPv4 address it maps, since a NetworkPolicy
// would read it as an IPv6 range that admits something else entirely.
func ParseCIDR(s string) (string, error) {
	var p netip.Prefix
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("invalid CIDR %q: an address with a zone names an interface, not a source; drop %%%s", s, a.Zone())
		}
		a = a.Unmap()
		p = netip.PrefixFrom(a, a.BitLen())
	} else {
		p, err = netip.ParsePrefix(s)
		if err != nil {
			return "", fmt.Errorf("invalid CIDR %q: want an address range such as 10.0.0.0/8 or an IP address", s)
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return "", fmt.Errorf("invalid CIDR %q: an IPv4-mapped range must be /96 or longer; give the IPv4 range instead", s)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
	}
	if m := p.Masked(); m != p {
		return "", fmt.Errorf("invalid CIDR %q: host bits are set; did you mean %s?", s, m)
	}
	return p.String(), nil
}
