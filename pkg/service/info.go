package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
)

// Info is a service as 'service list' and 'service info' show it; its
// JSON shape is documented in docs/output.md. It never holds a secret
// value.
type Info struct {
	Name    string `json:"name"`
	Plan    string `json:"plan"`
	Version string `json:"version,omitempty"`
	Image   string `json:"image,omitempty"`
	// Status: ready (accepts connections), starting, failed (with
	// Reason), stopped (no unit), external (create --uri).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Size is the volume asked for; Capacity what it got ("" unbound).
	Size     string `json:"size,omitempty"`
	Capacity string `json:"capacity,omitempty"`
	// Used is how much of the volume is used, as the unit's df says
	// ('service info' only; "" when unknown).
	Used   string `json:"used,omitempty"`
	Volume string `json:"volume,omitempty"`
	Host   string `json:"host,omitempty"`
	Port   int32  `json:"port,omitempty"`
	// Secrets name the credentials Secret and the binding Secret.
	CredentialsSecret string      `json:"credentialsSecret"`
	BindingSecret     string      `json:"bindingSecret"`
	Apps              []BoundApp  `json:"apps"`
	CreatedAt         time.Time   `json:"createdAt"`
	External          bool        `json:"external,omitempty"`
	Binding           BindingKeys `json:"binding"`
}

// BindingKeys are the keys a binding gives (values never shown here).
type BindingKeys struct {
	Type string   `json:"type"`
	Keys []string `json:"keys"`
}

// BoundApp is an app bound to the service and the names it sees.
type BoundApp struct {
	App       string   `json:"app"`
	Variables []string `json:"variables"`
	// Files is where the binding's files are: $SERVICE_BINDING_ROOT/NAME.
	Files string `json:"files"`
	// live: units of the app use the binding, or the app runs a release
	// (a rotate rolls it out); false for an app that never ran one (a
	// failed first deploy), which has no unit to roll.
	live bool
}

// Get is one service, or a not-found input error.
func Get(ctx context.Context, d Deps, name string) (*Info, error) {
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return nil, err
	}
	i, err := d.info(ctx, rec)
	if err == nil && i.Status == "ready" && rec.Spec.DataPath != "" && d.Exec != nil {
		i.Used = d.used(ctx, rec)
	}
	return i, err
}

// used is the data volume's use as df in the unit says it ("" when it
// cannot be told: best effort, info goes on without it).
func (d Deps) used(ctx context.Context, rec *Record) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := d.runInUnit(ctx, rec, []string{"df", "-Pk", rec.Spec.DataPath}, nil, &out, nil); err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 3 {
		return ""
	}
	kb, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return ""
	}
	return resource.NewQuantity(kb*1024, resource.BinarySI).String()
}

// List is the namespace's services, by name.
func List(ctx context.Context, d Deps) ([]Info, error) {
	recs, err := listRecords(ctx, d.Client, d.Namespace)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(recs))
	for _, r := range recs {
		i, err := d.info(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, *i)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d Deps) info(ctx context.Context, rec *Record) (*Info, error) {
	i := &Info{Name: rec.Name, Plan: rec.Plan, Version: rec.Version, Image: rec.Image, Size: rec.Size, CreatedAt: rec.CreatedAt,
		External: rec.External, CredentialsSecret: CredentialsSecretName(rec.Name), BindingSecret: BindingSecretName(rec.Name), Apps: []BoundApp{}}
	if rec.Spec != nil {
		i.Port = rec.Spec.Port
		i.Binding.Type = rec.Spec.Type
		for k := range rec.Spec.Binding {
			i.Binding.Keys = append(i.Binding.Keys, k)
		}
		i.Binding.Keys = append(i.Binding.Keys, "type", "provider")
		sort.Strings(i.Binding.Keys)
	}
	// three independent reads side by side: the binding's address, the
	// units' status and the bound apps (each a request or several)
	var apps []BoundApp
	var statusErr, appsErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if rec.External {
			i.Status = "external"
		} else {
			statusErr = d.unitStatus(ctx, rec, i)
		}
	})
	wg.Go(func() { apps, appsErr = boundApps(ctx, d, rec) })
	b, err := d.Client.CoreV1().Secrets(d.Namespace).Get(ctx, BindingSecretName(rec.Name), metav1.GetOptions{})
	wg.Wait()
	if err := errors.Join(statusErr, appsErr); err != nil {
		return nil, err
	}
	if err == nil {
		i.Host = string(b.Data["host"])
		if p, err := strconv.Atoi(string(b.Data["port"])); err == nil {
			i.Port = int32(p)
		}
	}
	i.Apps = apps
	return i, nil
}

// unitStatus fills the status from the service's units and its volume.
func (d Deps) unitStatus(ctx context.Context, rec *Record, i *Info) error {
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelService + "=" + rec.Name})
	if err != nil {
		return kube.TranslateError(err)
	}
	i.Status = "stopped"
	for k := range pods.Items {
		p := &pods.Items[k]
		switch {
		case kube.PodReady(p):
			i.Status, i.Reason = "ready", ""
		case i.Status != "ready":
			i.Status = "starting"
			if f := diagnose(p); f != nil {
				i.Status, i.Reason = "failed", f.Message
			}
		}
	}
	claims, err := d.Client.CoreV1().PersistentVolumeClaims(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: Selector(rec.Name)})
	if err != nil && !apierrors.IsForbidden(err) {
		return kube.TranslateError(err)
	}
	if err == nil && len(claims.Items) > 0 {
		c := claims.Items[0]
		i.Volume = c.Name
		if q, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
			i.Capacity = q.String()
		}
		if c.Status.Phase != corev1.ClaimBound && i.Status != "ready" {
			i.Reason = fmt.Sprintf("volume %s is %s", c.Name, c.Status.Phase)
		}
	}
	return nil
}

// Names are the namespace's services (for completion).
func Names(ctx context.Context, d Deps) ([]string, error) {
	recs, err := listRecords(ctx, d.Client, d.Namespace)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out, nil
}
