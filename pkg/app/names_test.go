package app

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // "" means valid
	}{
		{"web", ""},
		{"a", ""},
		{"my-app-2", ""},
		{"kubex", ""},
		{"kube", ""},
		{strings.Repeat("a", MaxAppNameLen), ""},
		{"", "empty"},
		{strings.Repeat("a", MaxAppNameLen+1), "31 characters; the limit is 30"},
		{"My-App", "invalid app name"},
		{"1app", "invalid app name"},
		{"-app", "invalid app name"},
		{"app-", "invalid app name"},
		{"my_app", "invalid app name"},
		{"my.app", "invalid app name"},
		{"my app", "invalid app name"},
		{"ünï", "invalid app name"},
		{"tug", "reserved"},
		{"kubernetes", "reserved"},
		{"default", "reserved"},
		{"system", "reserved"},
		{"all", "reserved"},
		{"kube-system", "reserved"},
		{"kube-x", "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateName(tt.name)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateName(%q) = %v, want nil", tt.name, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateName(%q) = %v, want error containing %q", tt.name, err, tt.wantErr)
			}
			if tt.name != "" && len(tt.name) <= MaxAppNameLen && !strings.Contains(err.Error(), tt.name) {
				t.Errorf("error %q does not name the app %q", err, tt.name)
			}
		})
	}
}

func TestValidateProcessName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string
	}{
		{"web", ""},
		{"worker", ""},
		{"worker2", ""},
		{"worker-2", "invalid process name"},
		{"w", ""},
		{strings.Repeat("p", MaxProcessNameLen), ""},
		{"", "empty"},
		{strings.Repeat("p", MaxProcessNameLen+1), "16 characters; the limit is 15"},
		{"Web", "invalid process name"},
		{"2web", "invalid process name"},
		{"web_1", "invalid process name"},
		{"web-", "invalid process name"},
		{"-web", "invalid process name"},
		{"web worker", "invalid process name"},
		{"run", "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateProcessName(tt.name)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateProcessName(%q) = %v, want nil", tt.name, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateProcessName(%q) = %v, want error containing %q", tt.name, err, tt.wantErr)
			}
		})
	}
}

// The limits exist so that every name derived from an app and a process stays
// a valid Kubernetes name: "<app>-<process>" for the Deployment, plus a
// 10-character pod-template hash and a 5-character suffix for its pods (a
// 63-character hostname).
func TestNameLimitsKeepDerivedNamesValid(t *testing.T) {
	deployment := MaxAppNameLen + 1 + MaxProcessNameLen
	if pod := deployment + 1 + 10 + 1 + 5; pod > 63 {
		t.Errorf("longest pod name is %d characters, over 63", pod)
	}
	longest := strings.Repeat("a", MaxAppNameLen)
	if n := len(ReleaseSecretName(longest, 999999)); n > 253 {
		t.Errorf("release secret name is %d characters", n)
	}
	if n := len(AppRecordName(longest)); n > 63 {
		t.Errorf("app record name is %d characters", n)
	}
}

func TestSortProcesses(t *testing.T) {
	names := []string{"worker", "clock", "web", "api"}
	SortProcesses(names)
	if got, want := strings.Join(names, ","), "web,api,clock,worker"; got != want {
		t.Errorf("SortProcesses = %s, want %s", got, want)
	}
	a := &App{Processes: map[string]Process{"worker": {}, "web": {}, "beat": {}}}
	if got, want := strings.Join(a.ProcessNames(), ","), "web,beat,worker"; got != want {
		t.Errorf("ProcessNames = %s, want %s", got, want)
	}
}
