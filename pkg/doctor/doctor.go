package doctor

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"golang.org/x/sync/errgroup"

	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
)

// Env is what doctor needs from its caller; cli.Factory provides it. Each
// step can fail, and doctor reports which one did.
type Env interface {
	ContextName() (string, error)
	Namespace() (string, error)
	RESTConfig() (*rest.Config, error)
	KubeClient() (kubernetes.Interface, error)
}

// Options tune a run; the zero value is fine.
type Options struct {
	Progress progress.Reporter
	// Concurrency bounds the access reviews in flight (default 8).
	Concurrency int
	// ClientMinor is the Kubernetes minor version tug's client library
	// speaks; 0 means the one linked in.
	ClientMinor int
	// Groups replaces the permission table (tests).
	Groups []CommandGroup
	// All counts missing cluster admin permissions as problems too;
	// otherwise an admin group the user cannot use is "unavailable".
	All bool
}

// Status of one check or command group.
type Status string

const (
	StatusOK      Status = "ok"
	StatusWarning Status = "warning"
	StatusFailed  Status = "failed"
	// StatusUnavailable: a cluster admin group the user does not hold;
	// not a problem for a developer (see Options.All).
	StatusUnavailable Status = "unavailable"
	// StatusError: the cluster could not answer whether the user may.
	StatusError Status = "error"
)

// Check is one step before the permission review.
type Check struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
}

// GroupResult says whether the user may use a command group, and if not,
// exactly which permissions are missing.
type GroupResult struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Admin       bool         `json:"admin,omitempty"`
	Status      Status       `json:"status"`
	Missing     []Permission `json:"missing"`
	// Errors are reviews the cluster could not answer.
	Errors []string `json:"errors,omitempty"`
}

// Report is the result of `tug doctor`; its JSON shape is documented in
// docs/output.md.
type Report struct {
	Context       string        `json:"context"`
	Server        string        `json:"server"`
	Namespace     string        `json:"namespace"`
	User          string        `json:"user"`
	ClientVersion string        `json:"clientVersion"`
	ServerVersion string        `json:"serverVersion"`
	Checks        []Check       `json:"checks"`
	Groups        []GroupResult `json:"groups"`
	OK            bool          `json:"ok"`
	// Level is the caller's access level of tug's in the namespace
	// (pkg/access), "" when it holds none; CannotRun are the commands
	// that need a higher one. Filled by the caller, which knows the
	// commands.
	Level     string   `json:"level,omitempty"`
	CannotRun []string `json:"cannotRun,omitempty"`
}

// Problems counts failed checks and groups with missing permissions.
func (r *Report) Problems() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == StatusFailed {
			n++
		}
	}
	for _, g := range r.Groups {
		if g.Status == StatusFailed || g.Status == StatusError {
			n++
		}
	}
	return n
}

const versionTimeout = 10 * time.Second

// defaults fills in what the caller left zero.
func (o *Options) defaults() {
	if o.Progress == nil {
		o.Progress = progress.Nop{}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.ClientMinor == 0 {
		o.ClientMinor = clientGoMinor
	}
	if o.Groups == nil {
		o.Groups = CommandGroups()
	}
}

// Run checks the kubeconfig, the cluster and every permission in the
// permission table. Problems found are in the report (OK false), not in the
// error; the error is for doctor itself failing, which only a cancelled
// context does.
func Run(ctx context.Context, env Env, opts Options) (*Report, error) {
	opts.defaults()
	r := &Report{Checks: []Check{}, Groups: []GroupResult{}}
	if opts.ClientMinor > 0 {
		r.ClientVersion = fmt.Sprintf("1.%d", opts.ClientMinor)
	}
	fail := func(name string, err error) (*Report, error) {
		r.Checks = append(r.Checks, Check{Name: name, Status: StatusFailed, Message: kube.TranslateError(err).Error()})
		opts.Progress.Fail(name + " failed")
		return r, ctx.Err()
	}

	// 1. The kubeconfig loads and names a cluster.
	opts.Progress.Update("loading kubeconfig")
	cfg, client, err := r.loadKubeconfig(env)
	if err != nil {
		return fail("kubeconfig", err)
	}

	// 2. The cluster answers.
	opts.Progress.Update("contacting " + r.Server)
	if err := r.checkCluster(ctx, client, opts.ClientMinor); err != nil {
		return fail("cluster", err)
	}

	// 3. Who the cluster thinks we are: RBAC answers depend on it.
	r.Checks = append(r.Checks, identityCheck(ctx, client, r))
	r.Checks = append(r.Checks, dockerfileBuildsCheck(ctx, client, r.Namespace))
	r.Checks = append(r.Checks, metricsCheck(ctx, client, r.Namespace))

	// 4. Every permission of every command group; the app-namespace ones
	// in each namespace that holds tug apps.
	opts.Progress.Update("reviewing permissions")
	r.Groups = reviewGroups(ctx, client, r.Namespace, appNamespaces(ctx, client, r.Namespace, opts.Groups), opts)

	// 5. The Gateway the namespace's apps route through, once the review
	// says whether the user may write their routes.
	opts.Progress.Update("checking the Gateway")
	var missing []Permission
	for _, g := range r.Groups {
		missing = append(missing, g.Missing...)
	}
	r.Checks = append(r.Checks, gatewayChecks(ctx, client, dynamicClient(env, cfg), r.Namespace, missing)...)
	r.OK = r.Problems() == 0
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if r.OK {
		opts.Progress.Done("all checks passed")
	} else {
		opts.Progress.Fail(fmt.Sprintf("%d problem(s) found", r.Problems()))
	}
	return r, nil
}

// loadKubeconfig reads the context, namespace and server into r and makes
// the client. The kubeconfig check is passed once it names a server: a
// client that cannot then be made is a second, failed, kubeconfig check.
func (r *Report) loadKubeconfig(env Env) (*rest.Config, kubernetes.Interface, error) {
	var err error
	if r.Context, err = env.ContextName(); err != nil {
		return nil, nil, err
	}
	if r.Namespace, err = env.Namespace(); err != nil {
		return nil, nil, err
	}
	cfg, err := env.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	r.Server = cfg.Host
	r.Checks = append(r.Checks, Check{Name: "kubeconfig", Status: StatusOK,
		Message: fmt.Sprintf("context %q, namespace %q", r.Context, r.Namespace)})
	client, err := env.KubeClient()
	if err != nil {
		return nil, nil, err
	}
	return cfg, client, nil
}

// checkCluster asks the server its version (within versionTimeout) and
// adds the cluster check and the check of the client's skew from it.
func (r *Report) checkCluster(ctx context.Context, client kubernetes.Interface, clientMinor int) error {
	vctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	info, err := discovery.ToServerVersionInterfaceWithContext(client.Discovery()).ServerVersionWithContext(vctx)
	if err != nil {
		return err
	}
	r.ServerVersion = info.GitVersion
	r.Checks = append(r.Checks, Check{Name: "cluster", Status: StatusOK,
		Message: fmt.Sprintf("%s answers, Kubernetes %s", r.Server, info.GitVersion)})
	r.Checks = append(r.Checks, skewCheck(clientMinor, info.Minor))
	return nil
}

// dynamicClient is the Env's dynamic client, or one made from cfg, on
// first use.
func dynamicClient(env Env, cfg *rest.Config) func() (dynamic.Interface, error) {
	if de, ok := env.(DynamicEnv); ok {
		return de.DynamicClient
	}
	return sync.OnceValues(func() (dynamic.Interface, error) { return dynamic.NewForConfig(cfg) })
}

// skewCheck follows Kubernetes' version skew policy: a client is supported
// within one minor version of the API server.
func skewCheck(clientMinor int, serverMinor string) Check {
	c := Check{Name: "version skew", Status: StatusOK}
	// Some distributions report "28+".
	server, err := strconv.Atoi(strings.TrimRight(serverMinor, "+"))
	if err != nil || clientMinor <= 0 {
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("cannot compare versions (client 1.%d, server minor %q)", clientMinor, serverMinor)
		return c
	}
	diff := clientMinor - server
	switch {
	case diff > 1 || diff < -1:
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("tug's client speaks Kubernetes 1.%d and the cluster runs 1.%d; more than one minor version apart is unsupported and may misbehave",
			clientMinor, server)
	default:
		c.Message = fmt.Sprintf("client 1.%d, server 1.%d", clientMinor, server)
	}
	return c
}

// clientGoMinor is the Kubernetes minor version of the client-go that tug
// links: client-go v0.N.x speaks Kubernetes 1.N. A test keeps it in step
// with go.mod (test binaries carry no module versions to read at run time).
const clientGoMinor = 37

// dockerfileBuildsCheck says whether the namespace's Pod Security level
// lets a Dockerfile build's pod (rootless BuildKit) start. Never a failure:
// builds with a builder image, and image deploys, need nothing of it.
func dockerfileBuildsCheck(ctx context.Context, client kubernetes.Interface, namespace string) Check {
	c := Check{Name: "dockerfile builds", Status: StatusOK}
	ps, err := imagebuild.CheckPodSecurity(ctx, client, namespace)
	if err != nil {
		c.Status = StatusWarning
		c.Message = "cannot read namespace " + namespace + "'s Pod Security level (" + kube.TranslateError(err).Error() + "); a Dockerfile build needs " + imagebuild.LabelPodSecurity + " unset or privileged"
		return c
	}
	if !ps.OK {
		c.Status = StatusWarning
	}
	c.Message = ps.Message
	return c
}

func identityCheck(ctx context.Context, client kubernetes.Interface, r *Report) Check {
	c := Check{Name: "identity"}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		c.Status = StatusWarning
		c.Message = "cannot tell who you are: " + kube.TranslateError(err).Error()
		return c
	}
	u := review.Status.UserInfo
	if u.Username == "" {
		c.Status = StatusWarning
		c.Message = "the cluster did not say who you are"
		return c
	}
	r.User = u.Username
	c.Status = StatusOK
	c.Message = "you are " + strconv.Quote(u.Username)
	if len(u.Groups) > 0 {
		c.Message += " in groups " + strings.Join(u.Groups, ", ")
	}
	if u.Username == "system:anonymous" {
		c.Status = StatusWarning
		c.Message = "the cluster treats you as anonymous: it accepted none of your kubeconfig's credentials"
	}
	return c
}

type verdict struct {
	allowed bool
	err     error
}

// appNamespaces are the namespaces where doctor reviews the app-namespaces
// permissions: those holding tug's Deployments (what node remove can meet
// on a node), found with the pool commands' own permission. When they
// cannot be listed (a developer) or there are none yet, the namespace
// checked stands for them.
func appNamespaces(ctx context.Context, client kubernetes.Interface, namespace string, groups []CommandGroup) []string {
	needed := false
	for _, g := range groups {
		for _, p := range g.Permissions {
			needed = needed || p.Scope == ScopeAppNamespaces
		}
	}
	if !needed {
		return nil
	}
	seen := map[string]bool{}
	err := kube.EachDeployment(ctx, client, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: kube.UnitDeploymentSelector()},
		func() { clear(seen) },
		func(d *appsv1.Deployment) { seen[d.Namespace] = true })
	if err != nil || len(seen) == 0 {
		return []string{namespace}
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// inNamespaces is p as reviewed: an app-namespaces permission once per app
// namespace, anything else as it is.
func inNamespaces(p Permission, appNS []string) []Permission {
	if p.Scope != ScopeAppNamespaces {
		return []Permission{p}
	}
	out := make([]Permission, len(appNS))
	for i, ns := range appNS {
		out[i] = p
		out[i].Namespace = ns
	}
	return out
}

// reviewGroups asks the API server about each distinct permission once,
// concurrently, and files the answers under every group that needs them.
func reviewGroups(ctx context.Context, client kubernetes.Interface, namespace string, appNS []string, opts Options) []GroupResult {
	var unique []Permission
	seen := map[Permission]bool{}
	for _, g := range opts.Groups {
		for _, tp := range g.Permissions {
			for _, p := range inNamespaces(tp, appNS) {
				if !seen[p] {
					seen[p] = true
					unique = append(unique, p)
				}
			}
		}
	}

	var mu sync.Mutex
	verdicts := make(map[Permission]verdict, len(unique))
	var eg errgroup.Group
	eg.SetLimit(opts.Concurrency)
	for _, p := range unique {
		eg.Go(func() error {
			allowed, err := review(ctx, client, namespace, p)
			mu.Lock()
			verdicts[p] = verdict{allowed: allowed, err: err}
			mu.Unlock()
			return nil
		})
	}
	_ = eg.Wait()

	results := make([]GroupResult, 0, len(opts.Groups))
	for _, g := range opts.Groups {
		res := GroupResult{Name: g.Name, Description: g.Description, Admin: g.Admin, Status: StatusOK, Missing: []Permission{}}
		errs := map[string]bool{}
		for _, tp := range g.Permissions {
			for _, p := range inNamespaces(tp, appNS) {
				v := verdicts[p]
				switch {
				case v.err != nil:
					errs[fmt.Sprintf("%s: %s", p, kube.TranslateError(v.err))] = true
				case !v.allowed:
					res.Missing = append(res.Missing, p)
				}
			}
		}
		for e := range errs {
			res.Errors = append(res.Errors, e)
		}
		sort.Strings(res.Errors)
		switch {
		case len(res.Errors) > 0:
			res.Status = StatusError
		case len(res.Missing) > 0 && g.Admin && !opts.All:
			res.Status = StatusUnavailable
		case len(res.Missing) > 0:
			res.Status = StatusFailed
		}
		results = append(results, res)
	}
	return results
}

func review(ctx context.Context, client kubernetes.Interface, namespace string, p Permission) (bool, error) {
	attrs := &authorizationv1.ResourceAttributes{
		Verb:        p.Verb,
		Group:       p.Group,
		Resource:    p.Resource,
		Subresource: p.Subresource,
	}
	switch p.Scope {
	case ScopeNamespace:
		attrs.Namespace = namespace
	case ScopeAppNamespaces:
		attrs.Namespace = p.Namespace
	}
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
	out, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return out.Status.Allowed, nil
}

// MissingSummary is "get,list,watch nodes (cluster); create pods/eviction
// (all namespaces)": verbs gathered per resource, in table order.
func MissingSummary(missing []Permission) string {
	type key struct {
		group, resource, sub string
		scope                Scope
		namespace            string
	}
	var order []key
	verbs := map[key][]string{}
	for _, p := range missing {
		k := key{p.Group, p.Resource, p.Subresource, p.Scope, p.Namespace}
		if _, ok := verbs[k]; !ok {
			order = append(order, k)
		}
		verbs[k] = append(verbs[k], p.Verb)
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		p := Permission{Group: k.group, Resource: k.resource, Subresource: k.sub, Scope: k.scope, Namespace: k.namespace}
		parts = append(parts, strings.Join(verbs[k], ",")+" "+p.resourceWithScope())
	}
	return strings.Join(parts, "; ")
}
