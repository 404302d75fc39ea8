package lifecycle

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
)

func TestCreate(t *testing.T) {
	_, s := newFake()
	ctx := context.Background()
	a, err := Create(ctx, s, CreateOptions{Name: "shop", Description: "d", Team: "t", Pool: "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Namespace != ns || a.Pool != "gpu" || a.Processes == nil || a.CreatedAt.IsZero() || a.Release != 0 {
		t.Errorf("Create = %+v", a)
	}
	if _, err := Create(ctx, s, CreateOptions{Name: "shop"}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second Create = %v", err)
	}
	if _, err := Create(ctx, s, CreateOptions{Name: "tug"}); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("Create(tug) = %v", err)
	}
	if _, err := Create(ctx, s, CreateOptions{Name: "ok", Pool: "bad pool!"}); err == nil || !strings.Contains(err.Error(), "invalid pool") {
		t.Errorf("Create with a bad pool = %v", err)
	}
	if _, err := s.GetApp(ctx, "ok"); !app.IsNotFound(err) {
		t.Errorf("a rejected Create stored the app: %v", err)
	}
}
