// Package clustersettings holds what a cluster offers every app: the Gateway
// its routes attach to, the domain its app URLs live under, the certificate
// issuer, the build images. An admin writes them once ('tug cluster settings
// set'); every user's tug reads them from the cluster itself, so two users of
// one cluster never disagree because of their own environment.
//
// They live in one ConfigMap, kube-public/tug-cluster-settings, that every
// authenticated user may read (a Role and RoleBinding that Write keeps). A
// key applies to the whole cluster; "pool.NAME.KEY" overrides it for the
// apps of pool NAME.
package clustersettings

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// Where the settings live.
const (
	Namespace = "kube-public"
	Name      = "tug-cluster-settings"
	// readerName is the Role and RoleBinding that let every authenticated
	// user read the settings ConfigMap (and nothing else in kube-public).
	readerName = "tug-cluster-settings-reader"
)

// The keys, as stored and as 'tug cluster settings set' takes them.
const (
	Gateway         = "gateway"         // NAMESPACE/NAME of the Gateway app routes attach to
	AppsDomain      = "appsDomain"      // each web app gets APP-NAMESPACE.<appsDomain>
	IngressClass    = "ingressClass"    // the IngressClass of the Ingresses tug makes
	Router          = "router"          // the controller behind the Gateway and the IngressClass: RouterTraefik, ...
	CertIssuer      = "certIssuer"      // ClusterIssuer/NAME or Issuer/NAME: cert-manager issues domains' certificates
	BuildkitImage   = "buildkitImage"   // the BuildKit image of Dockerfile builds
	BuildAgentImage = "buildAgentImage" // the image of tug's build agent
	DefaultBuilder  = "defaultBuilder"  // the builder of a deploy from source that names none
	GatewayClasses  = "gatewayClasses"  // the Gateways discovery may trust: NAMESPACE/CLASS or CLASS, comma-separated
	// DefaultRepository is where a deploy from source that names no
	// repository pushes: HOST/PATH, to which NAMESPACE/APP is added.
	DefaultRepository = "defaultRepository"
)

// The values of Router. Through Traefik an allow list is an ipAllowList
// Middleware on the app's routes; through ingress-nginx, its source-range
// annotations on the app's Ingresses; through any other router (or none
// named) it is not enforced at the router, only by the NetworkPolicy.
const (
	RouterTraefik      = "traefik"
	RouterIngressNginx = "ingress-nginx"
	RouterOther        = "other"
)

// Keys lists every key with what it is for, in the order 'show' prints them.
var Keys = []struct{ Key, About string }{
	{Gateway, "the Gateway (NAMESPACE/NAME) that app routes attach to; without one, the one Gateway that admits routes from the app's namespace, else an Ingress"},
	{GatewayClasses, "where no gateway is set, the Gateways tug may find: NAMESPACE/CLASS (of CLASS, standing in NAMESPACE, for every namespace they admit) or CLASS (of CLASS, in the app's own namespace), comma-separated; only Accepted and Programmed ones"},
	{AppsDomain, "the domain app URLs live under: APP-NAMESPACE.DOMAIN"},
	{IngressClass, "the IngressClass of the Ingresses tug makes (default: the cluster's default class)"},
	{Router, "the router behind the Gateway and the IngressClass: traefik, ingress-nginx or other; says where an app's allow list is enforced"},
	{CertIssuer, "the cert-manager issuer of domains' certificates: ClusterIssuer/NAME, or Issuer/NAME in each app's namespace"},
	{BuildkitImage, "the BuildKit image of Dockerfile builds"},
	{BuildAgentImage, "the image of tug's build agent"},
	{DefaultBuilder, "the builder image of a deploy from source that names none"},
	{DefaultRepository, "where a deploy from source that names no repository pushes: HOST[:PORT]/PATH, to which /NAMESPACE/APP is added"},
}

// Settings are the values that apply to one app: the cluster's, with its
// pool's overrides.
type Settings map[string]string

// Get is the value of key ("" when unset).
func (s Settings) Get(key string) string { return s[key] }

// GatewayRef splits the gateway setting into its namespace and name.
func (s Settings) GatewayRef() (namespace, name string, ok bool) {
	namespace, name, ok = strings.Cut(s[Gateway], "/")
	return namespace, name, ok && namespace != "" && name != ""
}

// Issuer is a cert-manager issuer as the certIssuer setting names it.
type Issuer struct {
	Kind string // "ClusterIssuer" or "Issuer" (of the app's namespace)
	Name string
}

func (i Issuer) String() string { return i.Kind + "/" + i.Name }

// ParseIssuer reads a certIssuer value: ClusterIssuer/NAME or Issuer/NAME.
func ParseIssuer(value string) (Issuer, error) {
	kind, name, ok := strings.Cut(value, "/")
	if !ok || (kind != "ClusterIssuer" && kind != "Issuer") || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return Issuer{}, fmt.Errorf("invalid %s %q: want ClusterIssuer/NAME or Issuer/NAME of a cert-manager issuer", CertIssuer, value)
	}
	return Issuer{Kind: kind, Name: name}, nil
}

// CertIssuer is the issuer these settings name: ok false when they name
// none; an error when the value is not one (a setting written by hand, or
// by a tug that took a bare name).
func (s Settings) CertIssuer() (i Issuer, ok bool, err error) {
	v := s[CertIssuer]
	if v == "" {
		return Issuer{}, false, nil
	}
	i, err = ParseIssuer(v)
	return i, err == nil, err
}

// Stored is the settings ConfigMap as read: the cluster's values and each
// pool's overrides.
type Stored struct {
	Cluster Settings            `json:"cluster"`
	Pools   map[string]Settings `json:"pools,omitempty"`
	// Found says the ConfigMap exists; Unreadable, that the user may not
	// read it (then tug goes on as if there were no settings).
	Found      bool `json:"found"`
	Unreadable bool `json:"unreadable,omitempty"`
}

// For is the settings of an app of pool ("" for none).
func (s *Stored) For(pool string) Settings {
	out := Settings{}
	if s == nil {
		return out
	}
	maps.Copy(out, s.Cluster)
	if pool != "" {
		maps.Copy(out, s.Pools[pool])
	}
	return out
}

const poolPrefix = "pool."

// Read reads the settings. A cluster without them, or whose settings the
// user may not read, has none: tug then behaves as it did before any were
// written (no Gateway, no apps domain, the built-in build images).
func Read(ctx context.Context, client kubernetes.Interface) (*Stored, error) {
	cm, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &Stored{Cluster: Settings{}}, nil
	case apierrors.IsForbidden(err):
		return &Stored{Cluster: Settings{}, Unreadable: true}, nil
	case err != nil:
		return nil, kube.TranslateError(err)
	}
	return fromData(cm.Data), nil
}

func fromData(data map[string]string) *Stored {
	s := &Stored{Cluster: Settings{}, Found: true}
	for k, v := range data {
		if rest, ok := strings.CutPrefix(k, poolPrefix); ok {
			pool, key, ok := strings.Cut(rest, ".")
			if !ok || !known(key) {
				continue
			}
			if s.Pools == nil {
				s.Pools = map[string]Settings{}
			}
			if s.Pools[pool] == nil {
				s.Pools[pool] = Settings{}
			}
			s.Pools[pool][key] = v
			continue
		}
		if known(k) {
			s.Cluster[k] = v
		}
	}
	return s
}

func (s *Stored) data() map[string]string {
	data := map[string]string{}
	maps.Copy(data, s.Cluster)
	for pool, ps := range s.Pools {
		for k, v := range ps {
			data[poolPrefix+pool+"."+k] = v
		}
	}
	return data
}

// knownKey says whether fromData reads stored key k (a key, or
// pool.NAME.KEY).
func knownKey(k string) bool {
	if rest, ok := strings.CutPrefix(k, poolPrefix); ok {
		_, key, ok := strings.Cut(rest, ".")
		return ok && known(key)
	}
	return known(k)
}

func known(key string) bool {
	return ServiceImageKey(key) || slices.ContainsFunc(Keys, func(k struct{ Key, About string }) bool { return k.Key == key })
}

// ServiceImageAbout says what the service image keys are, for help.
const ServiceImageAbout = "services.PLAN.image names the image of every version of a service plan (e.g. services.postgres.image), services.PLAN.image.VERSION one version's; without them a plan's own images are used"

// ServiceImageKey says whether key names a service plan's image:
// services.PLAN.image or services.PLAN.image.VERSION (pkg/service).
func ServiceImageKey(key string) bool {
	parts := strings.SplitN(key, ".", 4)
	if len(parts) < 3 || parts[0] != "services" || parts[2] != "image" || len(validation.IsDNS1123Label(parts[1])) > 0 {
		return false
	}
	return len(parts) == 3 || parts[3] != ""
}

// ServiceImage is the image these settings name for a plan's version: the
// version's own key, else the plan's ("" when neither is set).
func (s Settings) ServiceImage(plan, version string) string {
	if v := s["services."+plan+".image."+version]; v != "" {
		return v
	}
	return s["services."+plan+".image"]
}

// Change is 'tug cluster settings set|unset': values to set and keys to
// unset, for the cluster or one pool.
type Change struct {
	Pool  string
	Set   map[string]string
	Unset []string
}

// ParseAssignments reads KEY=VALUE arguments.
func ParseAssignments(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, inputerr.Errorf("%q: want KEY=VALUE (keys: %s)", a, keyNames())
		}
		if _, dup := out[k]; dup {
			return nil, inputerr.Errorf("%s is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

func keyNames() string {
	names := make([]string, len(Keys))
	for i, k := range Keys {
		names[i] = k.Key
	}
	return strings.Join(names, ", ")
}

// Validate checks every key and value before anything is written.
func (c Change) Validate() error {
	if c.Pool != "" {
		if err := kube.ValidateLabelValue("pool", c.Pool); err != nil {
			return inputerr.Wrap(err)
		}
	}
	if len(c.Set) == 0 && len(c.Unset) == 0 {
		return inputerr.Errorf("nothing to change: give KEY=VALUE to set, or KEY to unset")
	}
	for k, v := range c.Set {
		if err := validate(k, v); err != nil {
			return err
		}
	}
	for _, k := range c.Unset {
		if !known(k) {
			return inputerr.Errorf("unknown setting %q (keys: %s)", k, keyNames())
		}
		if _, set := c.Set[k]; set {
			return inputerr.Errorf("%s is both set and unset", k)
		}
	}
	return nil
}

func validate(key, value string) error {
	if !known(key) {
		return inputerr.Errorf("unknown setting %q (keys: %s)", key, keyNames())
	}
	check, ok := validators[key]
	if !ok {
		check = validImage
	}
	if why := check(value); why != "" {
		return inputerr.Errorf("invalid %s %q: %s", key, value, why)
	}
	return nil
}

// validators say what is wrong with a setting's value ("" nothing); a key
// with none is an image reference.
var validators = map[string]func(string) string{
	Gateway: func(v string) string {
		ns, name, ok := strings.Cut(v, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return "want NAMESPACE/NAME of a Gateway"
		}
		return ""
	},
	AppsDomain: func(v string) string {
		if net.ParseIP(v) != nil || len(validation.IsDNS1123Subdomain(v)) > 0 || !strings.Contains(v, ".") {
			return "want a DNS domain such as apps.example.com"
		}
		return ""
	},
	GatewayClasses: func(v string) string {
		for _, e := range strings.Split(v, ",") {
			ns, class, scoped := strings.Cut(strings.TrimSpace(e), "/")
			if !scoped {
				ns, class = "", ns
			}
			if (scoped && len(validation.IsDNS1123Label(ns)) > 0) || len(validation.IsDNS1123Subdomain(class)) > 0 {
				return "want NAMESPACE/CLASS or CLASS of GatewayClasses, comma-separated"
			}
		}
		return ""
	},
	Router: func(v string) string {
		if v != RouterTraefik && v != RouterIngressNginx && v != RouterOther {
			return "want traefik, ingress-nginx or other"
		}
		return ""
	},
	CertIssuer: func(v string) string {
		if _, err := ParseIssuer(v); err != nil {
			return err.Error()
		}
		return ""
	},
	IngressClass: func(v string) string {
		if len(validation.IsDNS1123Subdomain(v)) > 0 {
			return "want the name of a Kubernetes object"
		}
		return ""
	},
	DefaultRepository: func(v string) string {
		host, path, _ := strings.Cut(v, "/")
		if host == "" || strings.ContainsAny(v, " \t\n@") || path != strings.ToLower(path) || strings.Contains(path, ":") {
			return "want HOST[:PORT]/PATH of a registry, the path in lower case, with no tag or digest (each app pushes to PATH/NAMESPACE/APP)"
		}
		return ""
	},
}

func validImage(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\n") {
		return "want an image reference with no spaces"
	}
	return ""
}

// Apply makes the change to s.
func (c Change) Apply(s *Stored) {
	target := s.Cluster
	if c.Pool != "" {
		if s.Pools == nil {
			s.Pools = map[string]Settings{}
		}
		if s.Pools[c.Pool] == nil {
			s.Pools[c.Pool] = Settings{}
		}
		target = s.Pools[c.Pool]
	}
	maps.Copy(target, c.Set)
	for _, k := range c.Unset {
		delete(target, k)
	}
	if c.Pool != "" && len(target) == 0 {
		delete(s.Pools, c.Pool)
	}
}

// Write makes the change in the cluster (an admin's: it needs to create and
// update ConfigMaps, Roles and RoleBindings in kube-public) and returns the
// settings as they now stand. The update is a compare-and-swap on the
// ConfigMap's resourceVersion: two admins changing settings at once do not
// lose a change (the second retries on the first's).
func Write(ctx context.Context, client kubernetes.Interface, c Change) (*Stored, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cms := client.CoreV1().ConfigMaps(Namespace)
	for attempt := 0; ; attempt++ {
		cm, err := cms.Get(ctx, Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s := &Stored{Cluster: Settings{}}
			c.Apply(s)
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace,
				Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy}}, Data: s.data()}
			if _, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: kube.FieldManager}); err == nil {
				s.Found = true
				return s, ensureReaders(ctx, client)
			}
		} else if err == nil {
			s := fromData(cm.Data)
			c.Apply(s)
			data := s.data()
			// keys this tug does not know (a newer one's) stay as they are
			for k, v := range cm.Data {
				if !knownKey(k) {
					data[k] = v
				}
			}
			cm.Data = data
			if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: kube.FieldManager}); err == nil {
				return s, ensureReaders(ctx, client)
			}
		}
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5 {
			continue
		}
		return nil, fmt.Errorf("writing the cluster settings (ConfigMap %s/%s): %w", Namespace, Name, kube.TranslateError(err))
	}
}

// ensureReaders lets every authenticated user read the settings ConfigMap
// and nothing else of kube-public.
func ensureReaders(ctx context.Context, client kubernetes.Interface) error {
	labels := map[string]string{kube.LabelManagedBy: kube.ManagedBy}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: readerName, Namespace: Namespace, Labels: labels},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{Name}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: readerName, Namespace: Namespace, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: readerName},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}}}
	if _, err := client.RbacV1().Roles(Namespace).Create(ctx, role, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the settings are written, but letting every user read them failed (Role %s/%s): %w", Namespace, readerName, kube.TranslateError(err))
	}
	if _, err := client.RbacV1().RoleBindings(Namespace).Create(ctx, binding, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the settings are written, but letting every user read them failed (RoleBinding %s/%s): %w", Namespace, readerName, kube.TranslateError(err))
	}
	return nil
}
