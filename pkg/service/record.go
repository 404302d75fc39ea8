package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// Record is what tug knows of a service: one ConfigMap tug-service-NAME.
// It keeps the plan as it was when the service was made, so a plan
// changed or unpublished later does not change what an existing service
// is, how it is dumped or removed.
type Record struct {
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	Version   string    `json:"version,omitempty"`
	Size      string    `json:"size,omitempty"`
	Image     string    `json:"image,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// External: a database tug does not run (create --uri); it has only
	// its credentials and binding.
	External bool  `json:"external,omitempty"`
	Spec     *Plan `json:"planSpec,omitempty"`
	// Rotation is a rotate under way (written before the new login is
	// made, cleared once the old one is revoked), so a rotate stopped part
	// way is finished by the next, never begun again over it.
	Rotation *Rotation `json:"rotation,omitempty"`
	// Review is the review app the service was made for (tug review up):
	// it goes with that review app, data and all.
	Review *ReviewOwner `json:"review,omitempty"`

	// resourceVersion is the record's ConfigMap's when it was read:
	// updateRecord writes only over that version.
	resourceVersion string
}

// Rotation is a rotate from one login to the other.
type Rotation struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// updateRecord writes r over the stored record only if that record is
// still the one r was read from (its resourceVersion): a record changed
// by another tug in between is a conflict, never overwritten.
func updateRecord(ctx context.Context, client kubernetes.Interface, ns string, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	cms := client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, ObjectName(r.Name), metav1.GetOptions{})
	if err != nil {
		return kube.TranslateError(err)
	}
	if cm.ResourceVersion != r.resourceVersion {
		return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, fmt.Errorf("the record of service %q changed since it was read", r.Name))
	}
	cm.Data = map[string]string{recordKey: string(b)}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	return err
}

// editRecord reads the record, edits it and writes it back, again from a
// fresh read when another tug changed it in between.
func editRecord(ctx context.Context, client kubernetes.Interface, ns, name string, edit func(*Record) error) (*Record, error) {
	var out *Record
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		r, err := readRecord(ctx, client, ns, name)
		if err != nil {
			return err
		}
		if err := edit(r); err != nil {
			return err
		}
		out = r
		return updateRecord(ctx, client, ns, r)
	})
	if err != nil && apierrors.IsConflict(err) {
		return nil, kube.TranslateError(err)
	}
	return out, err
}

const recordKey = "service"

func readRecord(ctx context.Context, client kubernetes.Interface, ns, name string) (*Record, error) {
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, ObjectName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && cm.Labels[LabelService] != name) {
		return nil, NotFound(name, ns)
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	var r Record
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), &r); err != nil {
		return nil, fmt.Errorf("the record of service %q (ConfigMap %s) is unreadable: %v", name, cm.Name, err)
	}
	r.resourceVersion = cm.ResourceVersion
	return &r, nil
}

// NotFound is the error for a service that does not exist: an input error
// (exit 2), with where to look.
func NotFound(name, ns string) error {
	return inputerr.Wrap(&app.NotFoundError{What: "service", Name: name, Namespace: ns, Hint: "see 'tug service list', or create it with 'tug service create " + name + " --plan PLAN'"})
}

func writeRecord(ctx context.Context, client kubernetes.Interface, ns string, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ObjectName(r.Name), Namespace: ns, Labels: r.labels()},
		Data: map[string]string{recordKey: string(b)}}
	_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: kube.FieldManager})
	return kube.TranslateError(err)
}

// listRecords reads every service record of the namespace.
func listRecords(ctx context.Context, client kubernetes.Interface, ns string) ([]*Record, error) {
	cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: Selector("")})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	var out []*Record
	for _, cm := range cms.Items {
		var r Record
		if cm.Name != ObjectName(cm.Labels[LabelService]) || json.Unmarshal([]byte(cm.Data[recordKey]), &r) != nil {
			continue
		}
		out = append(out, &r)
	}
	return out, nil
}

// ensureCredentials makes the service's credentials Secret unless it
// exists: values are generated once and never replaced by a create run
// again (after a kill), which would lock the data out.
func ensureCredentials(ctx context.Context, client kubernetes.Interface, ns string, r *Record) error {
	name, c := r.Name, r.Spec.Credentials
	secrets := client.CoreV1().Secrets(ns)
	cur, err := secrets.Get(ctx, CredentialsSecretName(name), metav1.GetOptions{})
	if err == nil {
		if cur.Labels[LabelService] != name {
			return fmt.Errorf("secret %q exists and is not tug's service %q: tug will not take it over; remove it or choose another name", cur.Name, name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	data := map[string][]byte{}
	for k, v := range c.Values {
		data[k] = []byte(v)
	}
	for _, k := range c.Generate {
		data[k] = []byte(randomSecret())
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CredentialsSecretName(name), Namespace: ns, Labels: r.labels()}, Data: data}
	_, err = secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: kube.FieldManager})
	return kube.TranslateError(err)
}

// randomSecret is 32 hex digits (128 bits): no character needs escaping
// in a URI, a shell or a connection string.
func randomSecret() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// readCredentials reads the Secret a service's credentials are in: tug's,
// or the one the plan names (an operator's).
func readCredentials(ctx context.Context, client kubernetes.Interface, ns string, r *Record) (map[string]string, error) {
	name := CredentialsSecretName(r.Name)
	if r.Spec != nil && r.Spec.Credentials.Secret != "" {
		n, err := renderString(r.Spec.Credentials.Secret, r.params(ns))
		if err != nil {
			return nil, err
		}
		name = n
	}
	s, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}

func (r *Record) params(ns string) Params {
	p := Params{Name: r.Name, Namespace: ns, Object: ObjectName(r.Name), Version: r.Version, Image: r.Image, Size: r.Size,
		CredentialsSecret: CredentialsSecretName(r.Name), labels: r.Review.labels()}
	if r.Spec != nil {
		p.Port = r.Spec.Port
	}
	return p
}
