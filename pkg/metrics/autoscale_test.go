package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
)

func hpa(name, app, process string, st autoscalingv2.HorizontalPodAutoscalerStatus) *autoscalingv2.HorizontalPodAutoscaler {
	labels := kube.AppLabels(app)
	if process != "" {
		labels[kube.LabelProcess] = process
	}
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev", Labels: labels}, Status: st}
}

func TestAutoscalersByProcessWithWhatTheyLastSaw(t *testing.T) {
	util := int32(87)
	scaled := metav1.NewTime(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	web := hpa("shop-web", "shop", "web", autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: 2, DesiredReplicas: 3, LastScaleTime: &scaled,
		CurrentMetrics: []autoscalingv2.MetricStatus{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{AverageUtilization: new(int32)}}},
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &util}}},
		},
	})
	worker := hpa("shop-worker", "shop", "worker", autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: 1, DesiredReplicas: 1,
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale"},
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: "FailedGetResourceMetric", Message: "missing request for cpu\x1b[31m\nin container worker"},
		},
	})
	noProcess := hpa("shop-odd", "shop", "", autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 9})
	other := hpa("blog-web", "blog", "web", autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 5})
	got, err := Autoscalers(context.Background(), fake.NewClientset(web, worker, noProcess, other), "dev", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d autoscalers, want web and worker only: %+v", len(got), got)
	}
	w := got["web"]
	if w.CurrentUnits != 2 || w.DesiredUnits != 3 || w.CurrentCPUPercent == nil || *w.CurrentCPUPercent != 87 || w.LastScale == nil || !w.LastScale.Equal(scaled.Time) || w.Problem != "" {
		t.Errorf("web = %+v", w)
	}
	k := got["worker"]
	if k.CurrentCPUPercent != nil || k.LastScale != nil {
		t.Errorf("worker has no CPU reading or scale yet: %+v", k)
	}
	if k.Problem != "FailedGetResourceMetric: missing request for cpu^[[31m in container worker" {
		t.Errorf("worker problem = %q (one line, the escape made visible)", k.Problem)
	}
}

func TestAutoscalersSaysWhyItCannotList(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("list", "horizontalpodautoscalers", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, "", errors.New("no"))
	})
	if _, err := Autoscalers(context.Background(), c, "dev", "shop"); err == nil {
		t.Fatal("a refused LIST must be an error")
	}
}
