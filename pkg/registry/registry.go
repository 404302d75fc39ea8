package registry

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
)

// kindRegistry is the tug.dev/kind of the credentials Secret.
const kindRegistry = "registry"

// SecretName is the kubernetes.io/dockerconfigjson Secret holding an app's
// registry credentials. It carries the app's labels, so removing the app
// removes it.
func SecretName(appName string) string { return "tug-registry-" + appName }

// Info is what `tug registry info` shows: where the app's units log in and
// which of them do, never the password. Its JSON shape is in docs/output.md.
type Info struct {
	App       string `json:"app"`
	Namespace string `json:"namespace"`
	// Secret is "" when the app pulls without credentials.
	Secret   string `json:"secret"`
	Server   string `json:"server,omitempty"`
	Username string `json:"username,omitempty"`
	// Units are the app's pods (units and one-off runs) whose spec pulls
	// with the Secret.
	Units []Unit `json:"units"`
}

// Unit is one pod that pulls with the credentials.
type Unit struct {
	Name    string `json:"name"`
	Process string `json:"process,omitempty"` // "" for a one-off run pod
}

// Set stores c as the app's pull credentials and makes its units use them:
// the Secret is created or updated, then the deployed release is re-applied
// with the Secret in imagePullSecrets and its rollout watched (a new password
// for the same Secret changes no pod spec, so nothing rolls). An app with no
// release yet only records the Secret; its first deploy uses it. The result
// is nil when nothing was rolled out.
func Set(ctx context.Context, d deploy.Deps, appName string, c Credentials, opts deploy.Options) (*Info, *deploy.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	if _, err := store.GetApp(ctx, appName); err != nil {
		return nil, nil, err
	}
	name := SecretName(appName)
	if err := writeSecret(ctx, d.Client, d.Namespace, appName, c); err != nil {
		return nil, nil, err
	}
	info := &Info{App: appName, Namespace: d.Namespace, Secret: name, Server: c.Server, Username: c.Username, Units: []Unit{}}
	res, err := point(ctx, d, appName, name, opts)
	return info, res, err
}

// Unset stops the app's units from pulling with credentials and deletes the
// Secret once no unit spec names it.
func Unset(ctx context.Context, d deploy.Deps, appName string, opts deploy.Options) (*deploy.Result, error) {
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	a, err := store.GetApp(ctx, appName)
	if err != nil {
		return nil, err
	}
	if a.RegistrySecret == "" {
		return nil, fmt.Errorf("app %q has no registry credentials to unset; see 'tug registry info %s'", appName, appName)
	}
	old := a.RegistrySecret
	res, err := point(ctx, d, appName, "", opts)
	if err != nil {
		return res, err
	}
	// only the Secret tug made: a name recorded by hand is left alone
	if old == SecretName(appName) {
		cur, err := d.Client.CoreV1().Secrets(d.Namespace).Get(ctx, old, metav1.GetOptions{})
		if exists, err := kube.CheckOwned("Secret", d.Namespace, old, appName, cur, err); err != nil || !exists {
			return res, err
		}
		err = d.Client.CoreV1().Secrets(d.Namespace).Delete(ctx, old, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return res, kube.TranslateError(err)
		}
	}
	return res, nil
}

// Get shows the app's credentials without the password, and the pods that
// pull with them.
func Get(ctx context.Context, client kubernetes.Interface, namespace, appName string) (*Info, error) {
	store := &app.Store{Client: client, Namespace: namespace}
	a, err := store.GetApp(ctx, appName)
	if err != nil {
		return nil, err
	}
	info := &Info{App: appName, Namespace: namespace, Secret: a.RegistrySecret, Units: []Unit{}}
	if a.RegistrySecret == "" {
		return info, nil
	}
	s, err := client.CoreV1().Secrets(namespace).Get(ctx, a.RegistrySecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("app %q pulls with secret %q, which is missing; set the credentials again with 'tug registry set %s --server HOST --username USER --password-stdin'", appName, a.RegistrySecret, appName)
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	ls, err := logins(s.Data[corev1.DockerConfigJsonKey])
	if err != nil {
		return nil, fmt.Errorf("secret %q of app %q: %w; set the credentials again with 'tug registry set'", s.Name, appName, err)
	}
	if len(ls) > 0 {
		info.Server, info.Username = ls[0].Server, ls[0].Username
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	for _, p := range pods.Items {
		for _, ref := range p.Spec.ImagePullSecrets {
			if ref.Name == a.RegistrySecret {
				info.Units = append(info.Units, Unit{Name: p.Name, Process: p.Labels[kube.LabelProcess]})
				break
			}
		}
	}
	sort.Slice(info.Units, func(i, j int) bool { return info.Units[i].Name < info.Units[j].Name })
	return info, nil
}

// writeSecret creates or updates the credentials Secret. A Secret of that
// name that tug did not make for this app is not overwritten.
func writeSecret(ctx context.Context, client kubernetes.Interface, ns, appName string, c Credentials) error {
	data, err := DockerConfigJSON(c)
	if err != nil {
		return err
	}
	labels := kube.AppLabels(appName)
	labels[kube.LabelKind] = kindRegistry
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(appName), Namespace: ns, Labels: labels},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: data},
	}
	secrets := client.CoreV1().Secrets(ns)
	cur, err := secrets.Get(ctx, want.Name, metav1.GetOptions{})
	exists, err := kube.CheckOwned("Secret", ns, want.Name, appName, cur, err)
	switch {
	case err != nil:
		return err
	case !exists:
		_, err = secrets.Create(ctx, want, metav1.CreateOptions{FieldManager: kube.FieldManager})
		return kube.TranslateError(err)
	case cur.Type != corev1.SecretTypeDockerConfigJson:
		return fmt.Errorf("secret %q exists in namespace %q but is not tug's registry secret for app %q; remove or rename it, then retry", want.Name, ns, appName)
	}
	want.ResourceVersion = cur.ResourceVersion
	_, err = secrets.Update(ctx, want, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	return kube.TranslateError(err)
}

// point records secret ("" for none) as the app's pull secret and, when a
// release is deployed, re-applies it so every unit's spec follows.
func point(ctx context.Context, d deploy.Deps, appName, secret string, opts deploy.Options) (*deploy.Result, error) {
	set := func(a *app.App) error { a.RegistrySecret = secret; return nil }
	recorded, err := recordIfUndeployed(ctx, d, appName, set)
	if err != nil || recorded {
		return nil, err
	}
	return deploy.Reshape(ctx, d, appName, set, opts)
}

// recordIfUndeployed updates the record of an app with no deployed release
// (Reshape refuses those: there is nothing to re-apply), in a transaction
// (the app's lock, its record read afresh under it), so a first deploy
// cannot start in between and miss the change.
func recordIfUndeployed(ctx context.Context, d deploy.Deps, appName string, change func(*app.App) error) (bool, error) {
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	a, err := store.GetApp(ctx, appName)
	if err != nil || a.Release != 0 {
		return false, err
	}
	t, err := deploy.Begin(ctx, d, appName, nil)
	if err != nil {
		return false, err
	}
	defer t.End()
	if t.App().Release != 0 {
		return false, nil
	}
	_, err = t.Update(change)
	return err == nil, err
}
