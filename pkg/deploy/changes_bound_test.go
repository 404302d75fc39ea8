package deploy

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
)

// env set of a variable a service binding sets is refused, as service
// bind refuses the clash from the other side; other variables pass.
func TestEnvChangeRefusesABoundVariable(t *testing.T) {
	a := &app.App{Name: "shop", Release: 1}
	base := &app.Release{App: "shop", Version: 1, Image: "img",
		Services: []app.ServiceBinding{{Service: "db", Prefix: "DATABASE", Type: "postgresql", Keys: []string{"uri", "host"}}}}
	_, _, err := EnvChange(app.ConfigMap{"DATABASE_URL": "postgres://elsewhere"}, nil, "")(a, base, app.ConfigMap{})
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "service unbind shop db") {
		t.Errorf("env set DATABASE_URL over a binding: %v", err)
	}
	if _, _, err := EnvChange(app.ConfigMap{"SERVICE_BINDING_ROOT": "/x"}, nil, "")(a, base, app.ConfigMap{}); !inputerr.Is(err) {
		t.Errorf("env set SERVICE_BINDING_ROOT over a binding: %v", err)
	}
	if _, _, err := EnvChange(app.ConfigMap{"FEATURE": "on"}, nil, "")(a, base, app.ConfigMap{}); err != nil {
		t.Errorf("an unrelated variable: %v", err)
	}
}
