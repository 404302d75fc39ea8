package service

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// externalTypes maps a URI's scheme to its binding type and variables.
var externalTypes = map[string]struct{ Type, Prefix, Port string }{
	"postgres":   {"postgresql", "DATABASE", "5432"},
	"postgresql": {"postgresql", "DATABASE", "5432"},
	"mysql":      {"mysql", "DATABASE", "3306"},
	"redis":      {"redis", "REDIS", "6379"},
	"rediss":     {"redis", "REDIS", "6379"},
}

// ParseURI checks an external service's URI; its error is an input error
// that never repeats the URI (it holds a password).
func ParseURI(uri string) (map[string]string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, inputerr.Errorf("invalid --uri: not a URI")
	}
	t, ok := externalTypes[u.Scheme]
	if !ok {
		return nil, inputerr.Errorf("invalid --uri: scheme %q is not one of postgres, postgresql, mysql, redis, rediss", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, inputerr.Errorf("invalid --uri: no host")
	}
	// every key, empty when the URI has no such part: bound releases
	// reference each key (not optional), so an update --uri without a
	// password must not drop the key their new units would fail on
	b := map[string]string{"type": t.Type, "provider": "external", "host": u.Hostname(), "port": u.Port(), "uri": uri,
		"username": "", "password": "", "database": strings.TrimPrefix(u.Path, "/")}
	if b["port"] == "" {
		b["port"] = t.Port
	}
	if u.User != nil {
		b["username"] = u.User.Username()
		b["password"], _ = u.User.Password()
	}
	return b, nil
}

// CreateExternal records a service tug does not run: its binding is made
// from uri, so apps bind it like any other; rotating it is the owner's
// job ('service update --uri'), and it has no backups.
func CreateExternal(ctx context.Context, d Deps, name, uri string) (*Info, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	b, err := ParseURI(uri)
	if err != nil {
		return nil, err
	}
	// under the service's lock, as Create: run again beside an update
	// --uri it could write the old URI back into the binding
	ctx, unlock, err := d.Hold(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	scheme, _, _ := strings.Cut(uri, ":")
	spec := &Plan{Name: "external", Type: b["type"], Provider: "external", EnvPrefix: externalTypes[scheme].Prefix, Versions: []string{"-"}}
	rec := &Record{Name: name, Plan: "external", External: true, CreatedAt: time.Now().UTC(), Spec: spec}
	if cur, err := readRecord(ctx, d.Client, d.Namespace, name); err == nil {
		if !cur.External {
			return nil, inputerr.Errorf("service %q already exists (plan %s) in namespace %q", name, cur.Plan, d.Namespace)
		}
		// a create stopped before its binding is finished; one that made
		// it is not changed here (a new URI is a rollout of every bound
		// app: 'service update --uri')
		if err := sameExternalURI(ctx, d, name, uri); err != nil {
			return nil, err
		}
		rec = cur
	} else if !inputerr.Is(err) {
		return nil, err
	} else if err := writeRecord(ctx, d.Client, d.Namespace, rec); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("configmap %q exists and is not a service record of tug's", ObjectName(name))
		}
		return nil, err
	}
	if err := d.putBinding(ctx, rec, b); err != nil {
		return nil, err
	}
	return Get(ctx, d, name)
}

// sameExternalURI fails when external service name already has a
// binding with another URI; the same URI is a create run again.
func sameExternalURI(ctx context.Context, d Deps, name, uri string) error {
	sec, err := d.Client.CoreV1().Secrets(d.Namespace).Get(ctx, BindingSecretName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return kube.TranslateError(err)
	}
	if string(sec.Data["uri"]) != uri {
		return inputerr.Errorf("service %q already exists with another URI; change it with 'tug service update %s --uri ...', which rolls out every bound app", name, name)
	}
	return nil
}

// UpdateURI gives an external service a new URI (its owner rotated the
// password, or it moved): the binding is rewritten and every bound app is
// rolled out with it.
func UpdateURI(ctx context.Context, d Deps, name, uri string, restart func(context.Context, string) error) ([]string, error) {
	b, err := ParseURI(uri)
	if err != nil {
		return nil, err
	}
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return nil, err
	}
	if !rec.External {
		return nil, inputerr.Errorf("service %q is run by tug (plan %s): its credentials change with 'tug service rotate %s'", name, rec.Plan, name)
	}
	ctx, unlock, err := d.Hold(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := d.putBinding(ctx, rec, b); err != nil {
		return nil, err
	}
	apps, err := boundApps(ctx, d, rec)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, a := range apps {
		d.Progress.Update("rolling out app " + a.App + " with the new URI")
		if err := restart(ctx, a.App); err != nil {
			return done, fmt.Errorf("app %q did not roll out with the new URI of service %q: %w", a.App, name, err)
		}
		done = append(done, a.App)
	}
	return done, nil
}
