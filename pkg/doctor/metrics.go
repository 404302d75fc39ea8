package doctor

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/metrics"
)

// metricsCheck asks the metrics API for the namespace's units once (the
// LIST unit list makes) and says what goes without it: CPU and memory in
// unit list, unit top and app info, and autoscaling, whose controller reads
// the same API.
func metricsCheck(ctx context.Context, client kubernetes.Interface, namespace string) Check {
	c := Check{Name: "metrics API", Status: StatusOK,
		Message: "metrics.k8s.io is served: unit list, unit top and app info show CPU and memory; autoscaling can act"}
	_, err := metrics.FromClient(client).PodUsage(ctx, namespace, kube.LabelManagedBy+"="+kube.ManagedBy)
	if err == nil {
		return c
	}
	c.Status = StatusWarning
	u, ok := metrics.AsUnavailable(err)
	switch {
	case ok && u.Reason == metrics.NotServed:
		c.Message = "the cluster does not serve metrics.k8s.io (install metrics-server): unit list, unit top and app info show no CPU or memory, and 'app autoscale' cannot scale"
	case ok && u.Reason == metrics.Forbidden:
		c.Message = "you may not list pods.metrics.k8s.io in namespace " + namespace + ": unit list and app info show no CPU or memory, unit top fails"
	default:
		c.Message = "the metrics API did not answer (" + err.Error() + "): unit list and app info may show no CPU or memory"
	}
	return c
}
