package access

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// MinTTL is the shortest token the TokenRequest API issues.
const MinTTL = 10 * time.Minute

// TokenOptions are 'tug access token'.
type TokenOptions struct {
	Name  string
	Level Level // "" with Rotate: the level it has
	TTL   time.Duration
	// Rotate deletes and recreates the identity, so every token issued
	// before is refused, and issues a new one.
	Rotate bool
}

// Token is a CI identity's new token; the JSON shape of docs/output.md
// (with the kubeconfig that holds it).
type Token struct {
	Name           string    `json:"name"`
	Subject        string    `json:"subject"`
	ServiceAccount string    `json:"serviceAccount"`
	Namespace      string    `json:"namespace"`
	Level          Level     `json:"level"`
	ExpiresAt      time.Time `json:"expiresAt"`
	Token          string    `json:"-"`
	// Warning is Grant.Warning of its binding.
	Warning string `json:"warning,omitempty"`
}

// Validate checks o before anything is asked of the cluster.
func (o TokenOptions) Validate() error {
	if err := ValidateCIName(o.Name); err != nil {
		return err
	}
	if o.TTL < MinTTL {
		return inputerr.Errorf("--ttl %s is too short: the TokenRequest API issues tokens of %s or more", o.TTL, MinTTL)
	}
	if o.Level == "" && !o.Rotate {
		return inputerr.Errorf("--role is required: viewer, developer, operator or admin")
	}
	return refuseAdminCI(o.Level)
}

// refuseAdminCI refuses a CI identity at admin. Anyone who may create pods
// or Secrets in the namespace (a developer) can act as any service account
// there: a pod naming it, or a service-account-token Secret naming it
// gives a token that never expires. An admin CI identity would make every
// developer an admin, and let them act under the CI name.
func refuseAdminCI(l Level) error {
	if l != Admin {
		return nil
	}
	return inputerr.Errorf("a service account cannot have the admin level: anyone who may create pods or Secrets in its namespace (a developer) can act as it, so that would make every developer there an admin; use --role operator or lower for CI")
}

// IssueToken makes (or with Rotate remakes) the ServiceAccount tug-ci-NAME
// in namespace, grants it the level, and returns a token from the
// TokenRequest API that expires after TTL.
func IssueToken(ctx context.Context, client kubernetes.Interface, namespace string, o TokenOptions) (*Token, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := Subject{Kind: "ServiceAccount", Name: ciPrefix + o.Name, Namespace: namespace}
	if err := retireExisting(ctx, client, namespace, s, &o); err != nil {
		return nil, err
	}
	if o.Level.Rank() == 0 {
		return nil, inputerr.Errorf("--role is required: viewer, developer, operator or admin")
	}
	if err := refuseAdminCI(o.Level); err != nil {
		return nil, err
	}
	sas := client.CoreV1().ServiceAccounts(namespace)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: namespace,
		Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelLevel: string(o.Level)}}}
	if _, err := sas.Create(ctx, sa, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
		return nil, kube.TranslateError(err)
	}
	g, _, err := Add(ctx, client, namespace, s, o.Level)
	if err != nil {
		// Nothing half-made stays behind a refused grant.
		_ = sas.Delete(context.WithoutCancel(ctx), s.Name, metav1.DeleteOptions{})
		return nil, err
	}
	secs := int64(o.TTL / time.Second)
	tr, err := sas.CreateToken(ctx, s.Name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	return &Token{Name: o.Name, Subject: s.Text(namespace), ServiceAccount: s.Name, Namespace: namespace, Level: o.Level,
		ExpiresAt: tr.Status.ExpirationTimestamp.UTC(), Token: tr.Status.Token, Warning: g.Warning}, nil
}

// retireExisting settles the service account that may already hold the
// token's name: issuing a new token needs none there; rotating needs tug's
// own, which goes, so that its tokens go with it.
func retireExisting(ctx context.Context, client kubernetes.Interface, namespace string, s Subject, o *TokenOptions) error {
	have, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, s.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if o.Rotate {
			return inputerr.Errorf("there is no CI token %q in namespace %q to rotate; make one with 'tug access token %s --role LEVEL'", o.Name, namespace, o.Name)
		}
		return nil
	case err != nil:
		return kube.TranslateError(err)
	case have.Labels[kube.LabelManagedBy] != kube.ManagedBy:
		return fmt.Errorf("service account %q in namespace %q is not tug's; nothing was changed", s.Name, namespace)
	case !o.Rotate:
		return inputerr.Errorf("CI token %q exists in namespace %q; --rotate issues a new one (and refuses the old ones), 'tug access remove ci:%s' revokes it", o.Name, namespace, o.Name)
	}
	return retire(ctx, client, namespace, s, have, o)
}

// retire deletes the service account a rotate replaces, once the level
// the new one gets is known (the one the old holds, unless --role says):
// a rotate that cannot grant the new account a level must not take away
// the old one.
func retire(ctx context.Context, client kubernetes.Interface, namespace string, s Subject, have *corev1.ServiceAccount, o *TokenOptions) error {
	if o.Level == "" {
		// The level it holds now: 'access add ci:NAME' may have changed
		// it since the service account was labelled.
		var err error
		if o.Level, err = heldLevel(ctx, client, namespace, s); err != nil {
			return err
		}
	}
	if err := refuseAdminCI(o.Level); err != nil {
		return err
	}
	if o.Level.Rank() == 0 {
		return inputerr.Errorf("CI token %q holds no tug level in namespace %q (its binding was removed); give --role LEVEL to rotate it", o.Name, namespace)
	}
	// A new UID: the API server refuses every token of the old one.
	err := client.CoreV1().ServiceAccounts(namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &have.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}

// heldLevel is the highest level tug's bindings grant s in namespace, ""
// when none.
func heldLevel(ctx context.Context, client kubernetes.Interface, namespace string, s Subject) (Level, error) {
	rbs, err := client.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if err != nil {
		return "", kube.TranslateError(err)
	}
	held := Level("")
	for _, rb := range rbs.Items {
		if l := Level(rb.Labels[LabelLevel]); tugBindingFor(rb, s, namespace) && l.Rank() > held.Rank() {
			held = l
		}
	}
	return held, nil
}

// Cluster is where a kubeconfig points: the API server and how to trust it.
type Cluster struct {
	Server   string
	CAData   []byte
	Insecure bool
	TLSName  string
}

// Kubeconfig is a kubeconfig holding t, for a CI secret: one cluster, one
// user with the token, one context in t's namespace.
func Kubeconfig(c Cluster, t *Token) *clientcmdapi.Config {
	name := "tug-ci-" + t.Name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAData, InsecureSkipTLSVerify: c.Insecure, TLSServerName: c.TLSName}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: t.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: t.Namespace}
	cfg.CurrentContext = name
	return cfg
}
