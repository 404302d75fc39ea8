package traffic

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/route"
)

const ns = "team"

// newApp stores an app record (never deployed, so changes are only staged)
// in a fake cluster.
func newApp(t *testing.T, domains ...app.Domain) (*fake.Clientset, deploy.Deps) {
	t.Helper()
	c := fake.NewClientset()
	s := &app.Store{Client: c, Namespace: ns}
	if err := s.CreateApp(context.Background(), &app.App{Name: "shop", Namespace: ns, Domains: domains, Processes: map[string]app.Process{}}); err != nil {
		t.Fatal(err)
	}
	return c, deploy.Deps{Client: c, Namespace: ns, Holder: lock.Holder{User: "alice"}}
}

func record(t *testing.T, c *fake.Clientset) *app.App {
	t.Helper()
	a, err := (&app.Store{Client: c, Namespace: ns}).GetApp(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func secrets(t *testing.T, c *fake.Clientset) []corev1.Secret {
	t.Helper()
	l, err := c.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// certFiles writes a valid pair for host and returns CertAddOptions for it.
func certFiles(t *testing.T, host string) CertAddOptions {
	t.Helper()
	now := time.Now()
	cert, key := pair(t, []string{host}, now.Add(-time.Hour), now.Add(time.Hour))
	dir := t.TempDir()
	o := CertAddOptions{App: "shop", Host: host, CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	if err := os.WriteFile(o.CertFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.KeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestCertAdd(t *testing.T) {
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/"})
	res, err := CertAdd(context.Background(), d, certFiles(t, "SHOP.example.com"), deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != app.StatusStaged {
		t.Errorf("status %s, want staged (the app was never deployed)", res.Status)
	}
	name := route.TLSSecretName("shop", "shop.example.com")
	if got := record(t, c).Domains[0].TLSSecret; got != name {
		t.Errorf("record's TLS secret %q, want %q", got, name)
	}
	sec := secrets(t, c)
	if len(sec) != 1 || sec[0].Name != name || sec[0].Type != corev1.SecretTypeTLS || sec[0].Labels[kube.LabelApp] != "shop" {
		t.Fatalf("secrets %+v, want one TLS Secret %s of app shop", sec, name)
	}
	if _, err := c.CoordinationV1().Leases(ns).Get(context.Background(), lock.Name("shop"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the lock is left behind: %v", err)
	}
}

// A cert add whose lock is held by someone else fails and leaves no Secret:
// the Secret is written only with the lock held.
func TestCertAddLockedLeavesNoSecret(t *testing.T) {
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/"})
	holder, secs, now := "bob (pid 7 on desk)", int32(lock.LeaseDuration/time.Second), metav1.NewMicroTime(time.Now())
	if _, err := c.CoordinationV1().Leases(ns).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lock.Name("shop"), Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := CertAdd(context.Background(), d, certFiles(t, "shop.example.com"), deploy.Options{})
	var locked *lock.HeldError
	if !errors.As(err, &locked) || locked.Holder != holder {
		t.Fatalf("CertAdd = %v, want a LockedError naming %s", err, holder)
	}
	if sec := secrets(t, c); len(sec) != 0 {
		t.Errorf("a failed cert add left Secrets: %+v", sec)
	}
	if got := record(t, c).Domains[0].TLSSecret; got != "" {
		t.Errorf("the record names TLS secret %q", got)
	}
}

// The lease cannot be created (an API failure): no Secret either.
func TestCertAddLeaseCreateFailsLeavesNoSecret(t *testing.T) {
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/"})
	c.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	if _, err := CertAdd(context.Background(), d, certFiles(t, "shop.example.com"), deploy.Options{}); err == nil {
		t.Fatal("CertAdd succeeded without a lock")
	}
	if sec := secrets(t, c); len(sec) != 0 {
		t.Errorf("a failed cert add left Secrets: %+v", sec)
	}
}

// The Secret is written under the lock, but the record cannot be updated:
// the Secret is removed again.
func TestCertAddRecordFailsRemovesSecret(t *testing.T) {
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/"})
	c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "tug-app-shop", errors.New("no"))
	})
	if _, err := CertAdd(context.Background(), d, certFiles(t, "shop.example.com"), deploy.Options{}); err == nil {
		t.Fatal("CertAdd succeeded though the record could not be written")
	}
	if sec := secrets(t, c); len(sec) != 0 {
		t.Errorf("the Secret written under the lock was not removed: %+v", sec)
	}
}

// Replacing a certificate whose record change fails puts the old one back.
func TestCertAddRecordFailsRestoresOldSecret(t *testing.T) {
	name := route.TLSSecretName("shop", "shop.example.com")
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: name})
	old := certSecret(ns, "shop", name, "shop.example.com", []byte("old cert"), []byte("old key"))
	if _, err := c.CoreV1().Secrets(ns).Create(context.Background(), old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "tug-app-shop", errors.New("no"))
	})
	if _, err := CertAdd(context.Background(), d, certFiles(t, "shop.example.com"), deploy.Options{}); err == nil {
		t.Fatal("CertAdd succeeded though the record could not be written")
	}
	sec := secrets(t, c)
	if len(sec) != 1 || string(sec[0].Data[corev1.TLSCertKey]) != "old cert" {
		t.Errorf("the old certificate was not restored: %+v", sec)
	}
}

func TestCertAddInput(t *testing.T) {
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/"})
	good := certFiles(t, "shop.example.com")
	for _, tc := range []struct {
		name  string
		o     CertAddOptions
		want  string
		usage bool
	}{
		{"bad app", CertAddOptions{App: "Shop!", Host: "shop.example.com", CertFile: good.CertFile, KeyFile: good.KeyFile}, "", true},
		{"no key", CertAddOptions{App: "shop", Host: "shop.example.com", CertFile: good.CertFile}, "give both --cert FILE and --key FILE", true},
		{"missing file", CertAddOptions{App: "shop", Host: "shop.example.com", CertFile: "/nonexistent", KeyFile: good.KeyFile}, "--cert /nonexistent", true},
		{"other host", CertAddOptions{App: "shop", Host: "other.example.com", CertFile: good.CertFile, KeyFile: good.KeyFile}, "not for other.example.com", true},
		{"no such domain", certFiles(t, "api.example.com"), `app "shop" has no domain api.example.com`, false},
	} {
		_, err := CertAdd(context.Background(), d, tc.o, deploy.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || inputerr.Is(err) != tc.usage {
			t.Errorf("%s: CertAdd = %v (usage %v), want %q (usage %v)", tc.name, err, inputerr.Is(err), tc.want, tc.usage)
		}
	}
	if sec := secrets(t, c); len(sec) != 0 {
		t.Errorf("refused cert adds left Secrets: %+v", sec)
	}
}

func TestCertRemove(t *testing.T) {
	name := route.TLSSecretName("shop", "shop.example.com")
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: name})
	if _, err := c.CoreV1().Secrets(ns).Create(context.Background(), certSecret(ns, "shop", name, "shop.example.com", nil, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := CertRemove(context.Background(), d, "shop", "Shop.Example.com", deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	if sec := secrets(t, c); len(sec) != 0 {
		t.Errorf("the Secret stayed: %+v", sec)
	}
	if got := record(t, c).Domains[0].TLSSecret; got != "" {
		t.Errorf("the record still names %q", got)
	}
	if _, err := CertRemove(context.Background(), d, "shop", "shop.example.com", deploy.Options{}); err == nil || !strings.Contains(err.Error(), "has no certificate") {
		t.Errorf("removing it again: %v", err)
	}
}

func hostIngress(appName, host string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: ns, Labels: kube.AppLabels(appName)},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}}},
	}
}

// domain add looks the host's owner up with one LIST (and its claim with
// one of every namespace's), under the lock, even
// when the record's update is retried after a conflict.
func TestDomainAddListsIngressesOnce(t *testing.T) {
	c, d := newApp(t)
	conflicts := 1
	c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "tug-app-shop", errors.New("changed"))
		}
		return false, nil, nil
	})
	lists, leased := map[string]int{}, false
	c.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		leased = true
		return false, nil, nil
	})
	c.PrependReactor("list", "ingresses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !leased {
			t.Error("ingresses listed before the lock was taken")
		}
		lists[a.GetNamespace()]++ // "": every namespace's, for the host's claim
		return false, nil, nil
	})
	if _, err := DomainAdd(context.Background(), d, DomainAddOptions{App: "shop", Host: "Shop.Example.com", IngressClass: "nginx"}, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	if conflicts != 0 {
		t.Fatal("the record update was not retried")
	}
	if lists[ns] != 1 || lists[""] != 1 {
		t.Errorf("ingresses listed %v times, want once in the namespace and once in all", lists)
	}
	got := record(t, c).Domains
	if len(got) != 1 || got[0] != (app.Domain{Host: "shop.example.com", Path: "/", IngressClass: "nginx"}) {
		t.Errorf("domains %+v", got)
	}
}

func TestDomainAddRefused(t *testing.T) {
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/"})
	if _, err := c.NetworkingV1().Ingresses(ns).Create(context.Background(), hostIngress("blog", "blog.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o     DomainAddOptions
		want  string
		usage bool
	}{
		{DomainAddOptions{App: "shop", Host: "blog.example.com"}, `already routes to app "blog"`, false},
		{DomainAddOptions{App: "shop", Host: "shop.example.com"}, "already has domain", false},
		{DomainAddOptions{App: "shop", Host: "10.0.0.1"}, "not IP addresses", true},
		{DomainAddOptions{App: "shop", Host: "api.example.com", Path: "api"}, "invalid path", true},
		{DomainAddOptions{App: "-shop", Host: "api.example.com"}, "", true},
	} {
		_, err := DomainAdd(context.Background(), d, tc.o, deploy.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || inputerr.Is(err) != tc.usage {
			t.Errorf("%+v: DomainAdd = %v (usage %v), want %q (usage %v)", tc.o, err, inputerr.Is(err), tc.want, tc.usage)
		}
	}
	if got := record(t, c).Domains; len(got) != 1 {
		t.Errorf("domains changed: %+v", got)
	}
}

func TestDomainRemoveDeletesItsSecret(t *testing.T) {
	name := route.TLSSecretName("shop", "shop.example.com")
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: name}, app.Domain{Host: "shop.example.com", Path: "/api", TLSSecret: name})
	if _, err := c.CoreV1().Secrets(ns).Create(context.Background(), certSecret(ns, "shop", name, "shop.example.com", nil, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := DomainRemove(context.Background(), d, "shop", "SHOP.example.com", deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := record(t, c).Domains; len(got) != 0 {
		t.Errorf("domains left: %+v", got)
	}
	if sec := secrets(t, c); len(sec) != 0 {
		t.Errorf("the Secret stayed: %+v", sec)
	}
}

func TestSetAndAllow(t *testing.T) {
	c, d := newApp(t)
	ctx := context.Background()
	if _, err := Set(ctx, d, "shop", Routable, false, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	d.MaintenanceImage = "mirror.example/maintenance:v1"
	if _, err := Set(ctx, d, "shop", Maintenance, true, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	// the page's image is the one the command was given, recorded so every
	// later render (any command, export) keeps it
	if a := record(t, c); a.MaintenanceImage != d.MaintenanceImage {
		t.Errorf("record's maintenance image %q, want %q", a.MaintenanceImage, d.MaintenanceImage)
	}
	if m := render.Release(record(t, c), &app.Release{Version: 1, Image: "shop:1", Processes: map[string]string{"web": ""}}, nil).Maintenance; m == nil || m.Spec.Template.Spec.Containers[0].Image != d.MaintenanceImage {
		t.Errorf("maintenance Deployment %+v, want image %s", m, d.MaintenanceImage)
	}
	if _, err := Allow(ctx, d, AllowOptions{App: "shop", Sources: []string{"10.0.0.0/8", "192.168.1.5"}}, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Allow(ctx, d, AllowOptions{App: "shop", Sources: []string{"10.0.0.0/8"}, Remove: true}, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	a := record(t, c)
	if !a.Unroutable || !a.Maintenance || len(a.Allow) != 1 || a.Allow[0] != "192.168.1.5/32" {
		t.Errorf("record %+v", a)
	}
	if _, err := Allow(ctx, d, AllowOptions{App: "shop", Sources: []string{"10.0.0.0/8"}, Remove: true}, deploy.Options{}); err == nil || !strings.Contains(err.Error(), "does not allow 10.0.0.0/8") {
		t.Errorf("removing a source not allowed: %v", err)
	}
	if _, err := Allow(ctx, d, AllowOptions{App: "shop", Sources: []string{"10.0.0.1/8"}}, deploy.Options{}); !inputerr.Is(err) {
		t.Errorf("a CIDR with host bits: %v, want a usage error", err)
	}
	for in, want := range map[string]string{"on": "true", "off": "false", "yes": "error"} {
		on, err := ParseOnOff(in)
		if got := map[bool]string{true: "true", false: "false"}[on]; err != nil {
			if want != "error" || !inputerr.Is(err) {
				t.Errorf("ParseOnOff(%q) = %v", in, err)
			}
		} else if got != want {
			t.Errorf("ParseOnOff(%q) = %s, want %s", in, got, want)
		}
	}
}

// A Secret named like the host's certificate that tug did not make for the
// app is neither overwritten by cert add nor deleted by domain remove, and
// the error names it.
func TestCertSecretNotTugsIsLeftAlone(t *testing.T) {
	name := route.TLSSecretName("shop", "shop.example.com")
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"owner": "ops"}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: []byte("theirs")},
	}
	check := func(c *fake.Clientset) {
		t.Helper()
		got, err := c.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the foreign Secret is gone: %v", err)
		}
		if string(got.Data[corev1.TLSCertKey]) != "theirs" || got.Labels[kube.LabelManagedBy] != "" {
			t.Errorf("the foreign Secret changed: %+v", got)
		}
	}
	wantRefusal := func(err error) {
		t.Helper()
		var notOurs *kube.NotOwnedError
		if !errors.As(err, &notOurs) || !strings.Contains(err.Error(), `Secret "`+name+`"`) {
			t.Errorf("err = %v, want a NotOwnedError naming Secret %s", err, name)
		}
	}

	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/"})
	if _, err := c.CoreV1().Secrets(ns).Create(context.Background(), foreign.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := CertAdd(context.Background(), d, certFiles(t, "shop.example.com"), deploy.Options{})
	wantRefusal(err)
	check(c)
	if got := record(t, c).Domains[0].TLSSecret; got != "" {
		t.Errorf("record names the foreign secret: %q", got)
	}

	// A record that names it (written by an older tug, or by hand).
	c, d = newApp(t, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: name})
	if _, err := c.CoreV1().Secrets(ns).Create(context.Background(), foreign.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = DomainRemove(context.Background(), d, "shop", "shop.example.com", deploy.Options{})
	wantRefusal(err)
	check(c)
}
