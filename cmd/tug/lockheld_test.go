package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tug.dev/tug/pkg/lock"
)

// A command refused because another tug holds the app's lock exits with
// its own code, and -o json prints an error object a CI script can read.
func TestHeldLockHasItsOwnExitCodeAndJSONError(t *testing.T) {
	p := shopFixture(t)
	acquired := p.ago("lease-acquired", 2*time.Minute)
	renewed := metav1.NewMicroTime(time.Now())
	p.add(t, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lock.Name("shop"), Namespace: "dev"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("alice@laptop (app deploy) #abc"), LeaseDurationSeconds: ptr.To(int32(30)),
			AcquireTime: &metav1.MicroTime{Time: acquired}, RenewTime: &renewed},
	})
	for _, args := range [][]string{
		{"app", "deploy", "shop", "--image", "registry.example/shop:4", "-o", "json"},
		{"release", "rollback", "shop", "-o", "json"},
	} {
		r := p.run(t, false, args...)
		if r.code != 19 || !strings.Contains(r.stderr, `error: app "shop" is being changed by alice@laptop (app deploy)`) {
			t.Fatalf("tug %s: exit %d, stderr %q; want 19 and who holds the lock", strings.Join(args, " "), r.code, r.stderr)
		}
		var obj struct {
			Error struct {
				Class    string    `json:"class"`
				Message  string    `json:"message"`
				ExitCode int       `json:"exitCode"`
				App      string    `json:"app"`
				Holder   string    `json:"holder"`
				Since    time.Time `json:"since"`
				Expires  time.Time `json:"expires"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
			t.Fatalf("tug %s -o json printed no JSON: %v\n%s", strings.Join(args, " "), err, r.stdout)
		}
		e := obj.Error
		if e.Class != "locked" || e.ExitCode != 19 || e.App != "shop" || e.Holder != "alice@laptop (app deploy)" ||
			!e.Since.Equal(acquired) || e.Expires.Sub(renewed.Add(30*time.Second)).Abs() > time.Millisecond || !strings.Contains(e.Message, "is being changed by") {
			t.Errorf("error object = %+v", e)
		}
	}
	// without -o json, stdout stays empty
	if r := p.run(t, false, "release", "rollback", "shop"); r.code != 19 || r.stdout != "" {
		t.Errorf("without -o: exit %d, stdout %q", r.code, r.stdout)
	}
}
