package registry

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
)

// An app with no release: set stores the Secret and records it, info shows
// no password, unset forgets and deletes it.
func TestSetInfoUnsetUndeployed(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	d := deploy.Deps{Client: client, Namespace: "dev", Holder: lock.Holder{User: "test"}}
	store := &app.Store{Client: client, Namespace: "dev"}
	if err := store.CreateApp(ctx, &app.App{Name: "shop", Namespace: "dev"}); err != nil {
		t.Fatal(err)
	}
	creds := Credentials{Server: "r.example.com", Username: "bot", Password: "hunter2"}
	info, res, err := Set(ctx, d, "shop", creds, deploy.Options{})
	if err != nil || res != nil {
		t.Fatalf("set: %v (result %v)", err, res)
	}
	if info.Secret != "tug-registry-shop" {
		t.Fatalf("secret name %q", info.Secret)
	}
	s, err := client.CoreV1().Secrets("dev").Get(ctx, "tug-registry-shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != corev1.SecretTypeDockerConfigJson || s.Labels[kube.LabelApp] != "shop" || s.Labels[kube.LabelManagedBy] != "tug" || s.Labels[kube.LabelKind] != "registry" {
		t.Fatalf("secret type/labels: %s %v", s.Type, s.Labels)
	}
	if !strings.Contains(string(s.Data[corev1.DockerConfigJsonKey]), "hunter2") {
		t.Fatal("the password is not in the secret")
	}
	a, _ := store.GetApp(ctx, "shop")
	if a.RegistrySecret != "tug-registry-shop" {
		t.Fatalf("record: %q", a.RegistrySecret)
	}
	if _, err := client.CoordinationV1().Leases("dev").Get(ctx, lock.Name("shop"), metav1.GetOptions{}); err == nil {
		t.Fatal("the deploy lock was left behind")
	}

	got, err := Get(ctx, client, "dev", "shop")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if got.Server != "r.example.com" || got.Username != "bot" || strings.Contains(string(b), "hunter2") {
		t.Fatalf("info: %s", b)
	}

	// a new password updates the same Secret
	creds.Password = "second"
	if _, _, err := Set(ctx, d, "shop", creds, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	s, _ = client.CoreV1().Secrets("dev").Get(ctx, "tug-registry-shop", metav1.GetOptions{})
	if strings.Contains(string(s.Data[corev1.DockerConfigJsonKey]), "hunter2") {
		t.Fatal("the old password is still stored")
	}

	if _, err := Unset(ctx, d, "shop", deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("dev").Get(ctx, "tug-registry-shop", metav1.GetOptions{}); err == nil {
		t.Fatal("unset left the secret")
	}
	a, _ = store.GetApp(ctx, "shop")
	if a.RegistrySecret != "" {
		t.Fatalf("record after unset: %q", a.RegistrySecret)
	}
	if _, err := Unset(ctx, d, "shop", deploy.Options{}); err == nil {
		t.Fatal("unset twice: want an error")
	}
}

func TestSetRefusesSomeoneElsesSecret(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tug-registry-shop", Namespace: "dev"},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"x": []byte("theirs")},
	})
	store := &app.Store{Client: client, Namespace: "dev"}
	if err := store.CreateApp(ctx, &app.App{Name: "shop", Namespace: "dev"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := Set(ctx, deploy.Deps{Client: client, Namespace: "dev", Holder: lock.Holder{User: "test"}}, "shop", Credentials{Server: "r.io", Username: "u", Password: "hunter2"}, deploy.Options{})
	if err == nil || !strings.Contains(err.Error(), "not tug's") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("want a refusal that names no password, got %v", err)
	}
	s, _ := client.CoreV1().Secrets("dev").Get(ctx, "tug-registry-shop", metav1.GetOptions{})
	if string(s.Data["x"]) != "theirs" {
		t.Fatal("someone else's secret was overwritten")
	}
}

func TestSetUnknownAppChangesNothing(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	_, _, err := Set(ctx, deploy.Deps{Client: client, Namespace: "dev", Holder: lock.Holder{User: "test"}}, "ghost", Credentials{Server: "r.io", Username: "u", Password: "pw"}, deploy.Options{})
	if !app.IsNotFound(err) {
		t.Fatalf("want not found, got %v", err)
	}
	if list, _ := client.CoreV1().Secrets("dev").List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
		t.Fatalf("a secret was made for a missing app: %v", list.Items)
	}
}
