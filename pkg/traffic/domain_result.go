package traffic

import (
	"strings"
	"sync"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
)

// Domain changes: added or removed.
const (
	DomainAdded   = "added"
	DomainRemoved = "removed"
)

// DomainResult is what 'domain add' and 'domain remove' did, as -o
// json|yaml prints it (docs/output.md).
type DomainResult struct {
	App       string `json:"app"`
	Namespace string `json:"namespace"`
	Host      string `json:"host"`
	// Change is DomainAdded or DomainRemoved.
	Change string `json:"change"`
	// Changed are the domains the change added (one) or removed (every
	// path of the host), as the record had them.
	Changed []app.Domain `json:"changed"`
	// Domains are the app's domains after the change.
	Domains []app.Domain `json:"domains"`
	// Status is deployed, or staged: the app was never deployed, and the
	// change applies at its first deploy.
	Status app.Status `json:"status"`
	// URLs are where the app answers after the change (as app info's).
	URLs []string `json:"urls"`
	// Routing is how far its route through the Gateway got (deploy.Result).
	Routing    string `json:"routing,omitempty"`
	DurationMS int64  `json:"durationMs"`

	// Rollout is the change's rollout, for its done line.
	Rollout *deploy.Result `json:"-"`
}

// recorded keeps the record as a change's edit last left it: the edit
// runs on copies to check the change and last on the record written.
type recorded struct {
	mu sync.Mutex
	a  *app.App
}

func (r *recorded) keep(a *app.App) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.a = a.Copy()
}

// domainResult is the result of a change of host that rolled out as res,
// with the record as the change wrote it and the domains it changed.
func domainResult(res *deploy.Result, r *recorded, host, change string, changed []app.Domain) *DomainResult {
	out := &DomainResult{App: res.App, Namespace: res.Namespace, Host: host, Change: change, Changed: changed,
		Domains: []app.Domain{}, Status: res.Status, URLs: res.URLs, Routing: res.Routing, DurationMS: res.DurationMS, Rollout: res}
	if out.Changed == nil {
		out.Changed = []app.Domain{}
	}
	if r.a != nil {
		// a staged change rolls nothing out and its result has no URLs:
		// the record's are what the first deploy routes
		out.Domains = append(out.Domains, r.a.Domains...)
		out.URLs = app.URLs(r.a)
	}
	if out.URLs == nil {
		out.URLs = []string{}
	}
	return out
}

// hostDomains are a's domains of host.
func hostDomains(a *app.App, host string) []app.Domain {
	var out []app.Domain
	for _, d := range a.Domains {
		if strings.EqualFold(d.Host, host) {
			out = append(out, d)
		}
	}
	return out
}
