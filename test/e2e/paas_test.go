package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// A scale the nodes cannot hold fails with exit code 13 and puts the
// previous count back, in the Deployment and the app's record.
func TestScaleIsAllOrNothing(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	h.waitUnits("shop", "web", 1, sampleV1)
	// two nodes of 2 CPUs each hold one unit of 1500m, never 50; the
	// 500m left on each keeps room for other tests running beside this one
	h.mustTug("app", "limit", "set", "shop", "-p", "web", "--cpu-request", "1500m")
	h.waitUnits("shop", "web", 1, sampleV1)

	r := h.Tug("app", "scale", "shop", "web=50")
	if r.Code != 13 {
		t.Fatalf("app scale web=50: want exit 13 (unschedulable), got %s", r)
	}
	if !strings.Contains(r.Stderr, "restored the previous units (web=1)") {
		t.Errorf("the error does not say the count was put back:\n%s", r.Stderr)
	}
	if got := h.deploymentReplicas("shop-web"); got != 1 {
		t.Errorf("Deployment replicas = %d after the failed scale, want 1", got)
	}
	var info struct {
		Processes []struct {
			Name    string `json:"name"`
			Desired int32  `json:"desired"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", "shop", "-o", "json").Stdout), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Processes) != 1 || info.Processes[0].Desired != 1 {
		t.Errorf("app info after the failed scale: %+v", info.Processes)
	}
	h.waitUnits("shop", "web", 1, sampleV1)
	// a later deploy keeps the restored count
	h.mustTug("app", "deploy", "shop", "--image", sampleV2, "--process", "web=sample")
	if got := h.deploymentReplicas("shop-web"); got != 1 {
		t.Errorf("replicas after the next deploy = %d, want 1", got)
	}
}
