package service

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// writeBinding makes or updates the service's binding Secret
// (servicebinding.io/TYPE) from its credentials and its Service's address.
func (d Deps) writeBinding(ctx context.Context, rec *Record) error {
	values, err := d.bindingValues(ctx, rec)
	if err != nil {
		return err
	}
	return d.putBinding(ctx, rec, values)
}

// bindingValues are what the binding Secret holds: the plan's binding
// rendered over the credentials and the service's address.
func (d Deps) bindingValues(ctx context.Context, rec *Record) (map[string]string, error) {
	creds, err := readCredentials(ctx, d.Client, d.Namespace, rec)
	if err != nil {
		return nil, err
	}
	host, err := d.host(ctx, rec)
	if err != nil {
		return nil, err
	}
	return rec.Spec.RenderBinding(BindingData{Name: rec.Name, Host: host, Port: rec.Spec.Port, Credentials: creds})
}

func (d Deps) putBinding(ctx context.Context, rec *Record, values map[string]string) error {
	data := map[string][]byte{}
	for k, v := range values {
		data[k] = []byte(v)
	}
	secrets := d.Client.CoreV1().Secrets(d.Namespace)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: BindingSecretName(rec.Name), Namespace: d.Namespace, Labels: rec.labels()},
		Type: corev1.SecretType("servicebinding.io/" + rec.Spec.Type), Data: data}
	cur, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: kube.FieldManager})
	case err == nil && cur.Labels[LabelService] != rec.Name:
		return fmt.Errorf("secret %q exists and is not tug's service %q: tug will not take it over", s.Name, rec.Name)
	case err == nil:
		cur.Data = data
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	}
	return kube.TranslateError(err)
}

// host is the ClusterIP of the Service apps reach the service through:
// an address that works with or without cluster DNS, and stays the same
// for as long as that Service exists.
func (d Deps) host(ctx context.Context, rec *Record) (string, error) {
	name := ObjectName(rec.Name)
	if rec.Spec.HostService != "" {
		n, err := renderString(rec.Spec.HostService, rec.params(d.Namespace))
		if err != nil {
			return "", err
		}
		name = n
	}
	svc, err := d.Client.CoreV1().Services(d.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the Service %q of service %q: %w", name, rec.Name, kube.TranslateError(err))
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", fmt.Errorf("the Service %q of service %q has no cluster IP", name, rec.Name)
	}
	return svc.Spec.ClusterIP, nil
}

// Bind is a service bound to an app: ValidateBind's input.
type Bind struct {
	App     string
	Service string
	// Prefix names the variables ("": the plan's, e.g. DATABASE).
	Prefix string
	// Dir is the folder of the files under $SERVICE_BINDING_ROOT ("": the
	// service's name; review up names the app's service's).
	Dir string
}

// Validate checks a bind without a cluster; its error is an input error.
func (b Bind) Validate() error {
	if err := app.ValidateName(b.App); err != nil {
		return err
	}
	if err := ValidateName(b.Service); err != nil {
		return err
	}
	if b.Prefix != "" {
		return ValidatePrefix(b.Prefix)
	}
	return nil
}

// BindChange binds a service to an app as a new release. The service
// must exist and have its binding; each service binds once per app, and
// two bindings may not share a prefix.
func BindChange(ctx context.Context, d Deps, b Bind) deploy.Change {
	bind := deploy.SettingsChange(app.KindService, "service "+b.Service+" bound", func(a *app.App, r *app.Release) error {
		sb, err := Binding(ctx, d.Client, d.Namespace, b.Service, b.Prefix)
		if err != nil {
			return err
		}
		if b.Dir != b.Service {
			sb.Dir = b.Dir
		}
		return addBinding(a.Name, r, sb)
	})
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r, c, err := bind(a, base, config)
		if err != nil {
			return nil, nil, err
		}
		return r, c, configClash(a.Name, r, c, b.Service)
	}
}

// configClash refuses a binding whose variables the app's config already
// sets: which value a unit sees would depend on their order in its spec.
func configClash(appName string, r *app.Release, config app.ConfigMap, service string) error {
	for _, b := range r.Services {
		if b.Service != service {
			continue
		}
		for _, v := range render.BindingVariables(b) {
			if _, ok := config[v]; ok {
				return inputerr.Errorf("app %q's config sets %s, which binding service %q would set too: unset it first ('tug env unset %s %s') or bind with --as OTHER_PREFIX", appName, v, service, appName, v)
			}
		}
	}
	return nil
}

// Binding is how a release binds service (prefix "": the plan's): its
// type and the keys of its binding Secret, which must exist.
func Binding(ctx context.Context, client kubernetes.Interface, ns, service, prefix string) (app.ServiceBinding, error) {
	rec, err := readRecord(ctx, client, ns, service)
	if err != nil {
		return app.ServiceBinding{}, err
	}
	secret, err := client.CoreV1().Secrets(ns).Get(ctx, BindingSecretName(service), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return app.ServiceBinding{}, fmt.Errorf("service %q has no binding yet (its create did not finish); run 'tug service create %s --plan %s' again", service, service, rec.Plan)
	} else if err != nil {
		return app.ServiceBinding{}, kube.TranslateError(err)
	}
	if prefix == "" {
		prefix = rec.Spec.EnvPrefix
	}
	keys := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return app.ServiceBinding{Service: service, Prefix: prefix, Type: rec.Spec.Type, Keys: keys}, nil
}

func addBinding(appName string, r *app.Release, b app.ServiceBinding) error {
	for _, cur := range r.Services {
		if cur.Service == b.Service {
			return inputerr.Errorf("service %q is already bound to app %q (as %s); unbind it first with 'tug service unbind %s %s'", b.Service, appName, cur.Prefix, appName, b.Service)
		}
		if cur.BindingDir() == b.BindingDir() {
			return inputerr.Errorf("app %q already has the files of service %q under %s/%s", appName, cur.Service, render.ServiceBindingRoot, cur.BindingDir())
		}
		if cur.Prefix == b.Prefix {
			return inputerr.Errorf("app %q already has %s_URL from service %q; bind this one with --as OTHER_PREFIX", appName, b.Prefix, cur.Service)
		}
	}
	r.Services = append(slices.Clone(r.Services), b)
	return nil
}

// UnbindChange removes a service's binding from an app as a new release.
func UnbindChange(service string) deploy.Change {
	return deploy.SettingsChange(app.KindService, "service "+service+" unbound", func(a *app.App, r *app.Release) error {
		i := slices.IndexFunc(r.Services, func(b app.ServiceBinding) bool { return b.Service == service })
		if i < 0 {
			return inputerr.Errorf("service %q is not bound to app %q; see 'tug service info %s'", service, a.Name, service)
		}
		r.Services = slices.Delete(slices.Clone(r.Services), i, i+1)
		return nil
	})
}

// boundApps are the apps bound to the service, with the names they see:
// an app counts while its deployed or its newest release binds it (a bind
// still rolling out, or left pending by a kill) and while any of tug's
// Deployments, CronJobs or pods of it references the binding Secret
// (units of an older release still running). Remove refuses and rotate
// rolls out every one of them: the Secret and the login are in use.
func boundApps(ctx context.Context, d Deps, rec *Record) ([]BoundApp, error) {
	running, err := appsUsingSecret(ctx, d, BindingSecretName(rec.Name))
	if err != nil {
		return nil, err
	}
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	apps, err := store.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	out := []BoundApp{}
	for _, a := range apps {
		b, err := releaseBinding(ctx, store, a, rec.Name)
		// A viewer may not read Secrets, which releases made before the
		// split of records and values are (they hold the config): the app
		// is still named, without the variables only its release says.
		if kube.IsRBACDenial(err) {
			if slices.Contains(a.Services, rec.Name) || running[a.Name] {
				delete(running, a.Name)
				out = append(out, BoundApp{App: a.Name, Files: render.ServiceBindingRoot + "/" + rec.Name, live: true})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if b == nil && !running[a.Name] {
			continue
		}
		live := running[a.Name] || a.Release > 0
		delete(running, a.Name)
		ba := BoundApp{App: a.Name, Files: render.ServiceBindingRoot + "/" + rec.Name, Variables: []string{}, live: live}
		if b != nil {
			ba.Files = render.ServiceBindingRoot + "/" + b.BindingDir()
			for _, k := range b.Keys {
				if v := render.ServiceVariable(b.Prefix, k); v != "" {
					ba.Variables = append(ba.Variables, v)
				}
			}
		}
		out = append(out, ba)
	}
	for name := range running { // objects of an app whose record is gone
		out = append(out, BoundApp{App: name, Files: render.ServiceBindingRoot + "/" + rec.Name, Variables: []string{}, live: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].App < out[j].App })
	return out, nil
}

// releaseBinding is how app a's deployed release, else its newest,
// binds service (nil: neither does).
func releaseBinding(ctx context.Context, store *app.Store, a *app.App, service string) (*app.ServiceBinding, error) {
	for _, v := range []int{a.Release, a.LastRelease} {
		if v == 0 || (v == a.Release && !slices.Contains(a.Services, service)) {
			continue
		}
		// the record alone: a binding is no config value, and a release
		// whose config Secret is gone still says what it binds
		r, err := store.GetReleaseRecord(ctx, a.Name, v)
		if app.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		for i := range r.Services {
			if r.Services[i].Service == service {
				return &r.Services[i], nil
			}
		}
	}
	return nil, nil
}

// appsUsingSecret are the apps of which one of tug's Deployments,
// CronJobs or running pods (not stopping) references Secret secret.
func appsUsingSecret(ctx context.Context, d Deps, secret string) (map[string]bool, error) {
	sel := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy + "," + kube.LabelApp}
	out := map[string]bool{}
	deps, err := d.Client.AppsV1().Deployments(d.Namespace).List(ctx, sel)
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	for _, o := range deps.Items {
		if podUsesSecret(&o.Spec.Template.Spec, secret) {
			out[o.Labels[kube.LabelApp]] = true
		}
	}
	cjs, err := d.Client.BatchV1().CronJobs(d.Namespace).List(ctx, sel)
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	for _, o := range cjs.Items {
		if podUsesSecret(&o.Spec.JobTemplate.Spec.Template.Spec, secret) {
			out[o.Labels[kube.LabelApp]] = true
		}
	}
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, sel)
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	for _, p := range pods.Items {
		// a stopping pod read its variables long ago: rotate waits for it
		stopped := p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !stopped && podUsesSecret(&p.Spec, secret) {
			out[p.Labels[kube.LabelApp]] = true
		}
	}
	return out, nil
}

// podUsesSecret says whether a pod reads Secret secret: a volume, an env
// var or envFrom of any container.
func podUsesSecret(spec *corev1.PodSpec, secret string) bool {
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			return true
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == secret {
				return true
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && e.SecretRef.Name == secret {
				return true
			}
		}
	}
	return false
}

// CredentialsInfo is 'service credentials': the keys an app's binding
// has, and their values only when revealed (docs/output.md).
type CredentialsInfo struct {
	Service string            `json:"service"`
	Secret  string            `json:"secret"`
	Keys    []string          `json:"keys"`
	Values  map[string]string `json:"values,omitempty"`
}

// ReadCredentials reads a service's binding: what bound apps get. The
// values can always be read again (by whoever may read the Secret).
func ReadCredentials(ctx context.Context, d Deps, name string, reveal bool) (*CredentialsInfo, error) {
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return nil, err
	}
	s, err := d.Client.CoreV1().Secrets(d.Namespace).Get(ctx, BindingSecretName(rec.Name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("service %q has no credentials yet (its create did not finish); run its create again", name)
	} else if err != nil {
		return nil, kube.TranslateError(err)
	}
	out := &CredentialsInfo{Service: name, Secret: s.Name, Keys: []string{}}
	for k := range s.Data {
		out.Keys = append(out.Keys, k)
	}
	sort.Strings(out.Keys)
	if reveal {
		out.Values = map[string]string{}
		for k, v := range s.Data {
			out.Values[k] = string(v)
		}
	}
	return out, nil
}
