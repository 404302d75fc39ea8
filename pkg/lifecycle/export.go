package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/render"
)

// Exported is an app as plain manifests (Export).
type Exported struct {
	// Objects are the manifests, in the order to apply them.
	Objects []any
	App     string
	// Release is the release they run: the one that takes the app's
	// requests; Deployed, the app's deployed release when that is another
	// (a canary or blue-green that sends the new release every request).
	Release, Deployed int
	// LeftOut says what the manifests leave out and how to bring it, one
	// sentence each.
	LeftOut []string
}

// Header is what the YAML of an export starts with, as comment lines:
// which release it is and what it leaves out.
func (e *Exported) Header() []string {
	first := fmt.Sprintf("# app %s, release %d, as plain manifests (tug app export)", e.App, e.Release)
	if e.Deployed != 0 {
		first += fmt.Sprintf(": the release that takes every request now (release %d is still the deployed one)", e.Deployed)
	}
	lines := []string{first}
	if len(e.LeftOut) > 0 {
		lines = append(lines, "# left out:")
		for _, l := range e.LeftOut {
			lines = append(lines, "# - "+l)
		}
	}
	return lines
}

// Export renders an app as plain manifests that `kubectl apply` accepts
// without tug: no namespace (apply chooses it), no status, no server
// fields. It renders the one release that takes the app's requests: the
// deployed release, or during a canary or blue-green that sends it every
// request (weight 100: switched, promoting) the new one; never the two
// sides of a split, whose Deployment and Services belong to tug's
// canary.
//
// The copy must not take the original's place where both run: its routes
// carry no host of the app's own URL (APP-NAMESPACE under the apps
// domain belongs to this namespace), and no route token (the copy cannot
// answer tug's probe as the app); a route left with no host is left out
// (a route without hostnames takes every host). Domains the user added
// are kept. Config values are left out unless includeConfig: the
// Deployments then reference the release's Secret as optional, so the app
// runs, without its config, until that Secret is copied too. Volumes the
// release binds are exported as claims with the same size, access modes
// and storage class (the data stays behind); the registry Secret, like
// config, is not exported: copy it when the image is private.
func Export(ctx context.Context, s *app.Store, appName string, includeConfig bool) (*Exported, error) {
	a, err := s.GetApp(ctx, appName)
	if err != nil {
		return nil, err
	}
	if a.Release == 0 {
		return nil, fmt.Errorf("app %q has no deployed release to export; deploy it first", appName)
	}
	e := &Exported{App: a.Name, Release: a.Release}
	a = exportable(a)
	if a.Release != e.Release {
		e.Deployed, e.Release = e.Release, a.Release
	}
	r, config, err := s.GetRelease(ctx, appName, a.Release)
	if err != nil {
		return nil, err
	}
	objs := render.Release(a, r, config)
	e.LeftOut = leftOut(a, r, includeConfig, len(objs.Routes) > 0)
	out, err := exportClaims(ctx, s, r)
	if err != nil {
		return nil, err
	}
	if includeConfig {
		out = append(out, configSecret(a.Name, r.Version, config))
	}
	objects, err := exportObjects(deploy.Kinds(), objs.List(), includeConfig)
	if err != nil {
		return nil, err
	}
	e.Objects = append(out, objects...)
	return e, nil
}

// exportable is the app as its export renders it: one release, the one
// that takes its requests; no host of its own URL, no route token.
func exportable(a *app.App) *app.App {
	c := a.Copy()
	if k := c.Canary; k != nil && k.Weight == 100 && k.Phase != app.CanaryEnding {
		c.Release = k.Release
	}
	c.Canary = nil
	if c.Route != nil {
		c.Route.Host, c.Route.Token = "", ""
	}
	return c
}

// leftOut says what an export of release r leaves out.
func leftOut(a *app.App, r *app.Release, includeConfig, routes bool) []string {
	var out []string
	if !includeConfig {
		secret := app.ReleaseSecretName(a.Name, r.Version)
		out = append(out, fmt.Sprintf("config: the units start without it (Secret %s is optional); "+
			"export with --include-config, or create that Secret from 'tug env get %s'", secret, a.Name))
	}
	if a.Route != nil && a.Route.Gateway != "" {
		msg := "the app's own URL, which stays this app's"
		if routes {
			msg += "; the HTTPRoute keeps the app's domains, on Gateway " + a.Route.Gateway
		} else {
			msg += ": no HTTPRoute; add one for a host of your own"
		}
		out = append(out, msg)
	}
	if a.RegistrySecret != "" {
		out = append(out, "the registry Secret "+a.RegistrySecret+": copy it where the image is private")
	}
	return out
}

// exportClaims are the claims of r's volumes, as a cluster without them
// needs them made.
func exportClaims(ctx context.Context, s *app.Store, r *app.Release) ([]any, error) {
	var out []any
	seen := map[string]bool{}
	for _, b := range r.Volumes {
		if seen[b.Volume] {
			continue
		}
		seen[b.Volume] = true
		pvc, err := s.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Get(ctx, render.VolumeClaimName(b.Volume), metav1.GetOptions{})
		if err != nil {
			return nil, kube.TranslateError(err)
		}
		out = append(out, &corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: pvc.Name, Labels: pvc.Labels},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: pvc.Spec.AccessModes, Resources: pvc.Spec.Resources,
				StorageClassName: pvc.Spec.StorageClassName, VolumeMode: pvc.Spec.VolumeMode,
			},
		})
	}
	return out, nil
}

// configSecret is release v's config as the Secret its units read.
func configSecret(appName string, v int, config app.ConfigMap) *corev1.Secret {
	data := map[string][]byte{}
	for k, val := range config {
		data[k] = []byte(val)
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: app.ReleaseSecretName(appName, v), Labels: kube.AppLabels(appName)},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// exportObjects are the rendered objects, in the order of kinds,
// without their namespace (apply chooses it; a Middleware the Ingresses
// name with its namespace, a Certificate's issuer and a route's Gateway
// must then exist there too). Without the config, the pods of each kind
// that has them start without its Secret rather than not at all.
func exportObjects(kinds owned.Table, objs []owned.Object, includeConfig bool) ([]any, error) {
	entries, err := kinds.Sorted(objs)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		e.Obj.SetNamespace("")
		if !includeConfig && e.Kind.PodSpec != nil {
			configOptional(e.Kind.PodSpec(e.Obj))
		}
		if u, ok := e.Obj.(*unstructured.Unstructured); ok {
			out = append(out, u.Object)
			continue
		}
		out = append(out, e.Obj)
	}
	return out, nil
}

// configOptional makes the config Secret optional for spec's containers: an
// export without config starts without it rather than not at all.
func configOptional(spec *corev1.PodSpec) {
	for i := range spec.Containers {
		for _, ef := range spec.Containers[i].EnvFrom {
			if ef.SecretRef != nil {
				ef.SecretRef.Optional = new(true)
			}
		}
	}
}
