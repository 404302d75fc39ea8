package metrics

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// AutoscalerStatus is what a process's HorizontalPodAutoscaler last saw
// and did, from its status.
type AutoscalerStatus struct {
	// CurrentCPUPercent is the units' average CPU use as a share of their
	// request; nil until the autoscaler has read the metrics API.
	CurrentCPUPercent *int32     `json:"currentCPUPercent,omitempty"`
	CurrentUnits      int32      `json:"currentUnits"`
	DesiredUnits      int32      `json:"desiredUnits"`
	LastScale         *time.Time `json:"lastScale,omitempty"`
	// Problem is why the autoscaler cannot act, when it says so (no
	// metrics, no CPU request, ...).
	Problem string `json:"problem,omitempty"`
}

// Autoscalers reads the status of the app's autoscalers with one LIST, by
// process.
func Autoscalers(ctx context.Context, client kubernetes.Interface, namespace, appName string) (map[string]AutoscalerStatus, error) {
	l, err := client.AutoscalingV2().HorizontalPodAutoscalers(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	out := map[string]AutoscalerStatus{}
	for i := range l.Items {
		h := &l.Items[i]
		if p := h.Labels[kube.LabelProcess]; p != "" {
			out[p] = autoscalerStatus(h)
		}
	}
	return out, nil
}

func autoscalerStatus(h *autoscalingv2.HorizontalPodAutoscaler) AutoscalerStatus {
	s := AutoscalerStatus{CurrentUnits: h.Status.CurrentReplicas, DesiredUnits: h.Status.DesiredReplicas}
	if t := h.Status.LastScaleTime; t != nil {
		s.LastScale = &t.Time
	}
	for _, m := range h.Status.CurrentMetrics {
		if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			v := *m.Resource.Current.AverageUtilization
			s.CurrentCPUPercent = &v
		}
	}
	for _, c := range h.Status.Conditions {
		if (c.Type == autoscalingv2.ScalingActive || c.Type == autoscalingv2.AbleToScale) && c.Status == corev1.ConditionFalse {
			s.Problem = text.OneLine(text.Sanitize(c.Reason + ": " + c.Message))
		}
	}
	return s
}
