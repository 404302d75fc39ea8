package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
)

// A create run again while another tug holds the service's lock (a
// rotate) is refused instead of writing the binding under the rotate.
func TestCreateTakesTheServiceLock(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	other, err := lock.Acquire(context.Background(), lock.Request{Client: c, Namespace: testNS, App: LockKey("db"), Holder: lock.Holder{User: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Unlock()
	_, err = Create(context.Background(), d, CreateOptions{Name: "db", Plan: "postgres"})
	var held *lock.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("create while bob rotates: %v, want the lock's HeldError", err)
	}
}

// A create run again with another size says tug does not resize, rather
// than printing the service ready at its old size.
func TestCreateAgainWithAnotherSizeIsRefused(t *testing.T) {
	c := fake.NewClientset()
	d := Deps{Client: c, Namespace: testNS, Progress: progress.Nop{}}
	if err := writeRecord(context.Background(), c, testNS, &Record{Name: "db", Plan: "postgres", Size: "1Gi", Spec: Builtin()[0]}); err != nil {
		t.Fatal(err)
	}
	_, _, err := startCreate(context.Background(), d, CreateOptions{Name: "db", Plan: "postgres", Size: "5Gi"})
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "does not resize") {
		t.Errorf("create again with --size 5Gi: %v", err)
	}
	if _, resumed, err := startCreate(context.Background(), d, CreateOptions{Name: "db", Plan: "postgres", Size: "1024Mi"}); err != nil || !resumed {
		t.Errorf("the same size written another way: resumed=%v err=%v", resumed, err)
	}
}

// An external service made again with its URI is a create run again;
// with another URI it is refused (that is 'service update --uri', which
// rolls the bound apps out).
func TestCreateExternalAgain(t *testing.T) {
	c := fake.NewClientset()
	d := Deps{Client: c, Namespace: testNS, Progress: progress.Nop{}, Holder: lock.Holder{User: "alice"}}
	const uri = "postgres://u:p@db.example:5432/shop"
	if _, err := CreateExternal(context.Background(), d, "ext", uri); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateExternal(context.Background(), d, "ext", uri); err != nil {
		t.Errorf("the same URI again: %v", err)
	}
	_, err := CreateExternal(context.Background(), d, "ext", "postgres://u:NEW@db.example:5432/shop")
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "service update ext --uri") {
		t.Errorf("another URI: %v", err)
	}
	if b := bindingURI(t, d); b != uri {
		t.Errorf("the binding's uri is now %q", b)
	}
}

func bindingURI(t *testing.T, d Deps) string {
	t.Helper()
	sec, err := d.Client.CoreV1().Secrets(testNS).Get(context.Background(), BindingSecretName("ext"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(sec.Data["uri"])
}
