package doctor

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"tug.dev/tug/pkg/metrics/metricstest"
)

func servedMetrics(*http.Request) (int, string) { return 200, metricstest.PodMetrics(nil) }

func TestMetricsCheckSaysWhatNeedsIt(t *testing.T) {
	for _, c := range []struct {
		code   int
		status Status
		want   string
	}{
		{200, StatusOK, "unit list, unit top and app info show CPU and memory"},
		{404, StatusWarning, "does not serve metrics.k8s.io (install metrics-server)"},
		{503, StatusWarning, "'app autoscale' cannot scale"},
		{403, StatusWarning, "you may not list pods.metrics.k8s.io in namespace dev"},
		{500, StatusWarning, "did not answer"},
	} {
		cl := metricstest.New(newFakeCluster("37", allowAll), func(*http.Request) (int, string) {
			if c.code == 200 {
				return servedMetrics(nil)
			}
			return c.code, metricstest.Status(c.code, "x", "no")
		})
		got := metricsCheck(context.Background(), cl, "dev")
		if got.Status != c.status || !strings.Contains(got.Message, c.want) {
			t.Errorf("%d: %s %q; want %s and %q", c.code, got.Status, got.Message, c.status, c.want)
		}
	}
}
