package metricstest

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The metrics API answers with the Handler, which sees the request as
// sent; each request is counted; everything else is the wrapped clientset.
func TestClientAnswersWithHandler(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "u1", Namespace: "dev"}})
	var method, path, sel string
	c := New(cs, func(r *http.Request) (int, string) {
		method, path, sel = r.Method, r.URL.Path, r.URL.Query().Get("labelSelector")
		return 200, `{"answer":42}`
	})
	if c.Requests.Load() != 0 {
		t.Errorf("%d requests before any", c.Requests.Load())
	}
	raw, err := c.Discovery().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1", "namespaces", "dev", "pods").
		Param("labelSelector", "app=shop").Do(context.Background()).Raw()
	if err != nil || string(raw) != `{"answer":42}` {
		t.Fatalf("answer %q, %v", raw, err)
	}
	if method != "GET" || path != "/apis/metrics.k8s.io/v1beta1/namespaces/dev/pods" || sel != "app=shop" {
		t.Errorf("handler saw %s %s ?labelSelector=%s", method, path, sel)
	}
	if _, err := c.Discovery().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/nodes").DoRaw(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := c.Requests.Load(); n != 2 {
		t.Errorf("Requests = %d, want 2", n)
	}

	// the rest is the clientset's own
	if _, err := c.CoreV1().Pods("dev").Get(context.Background(), "u1", metav1.GetOptions{}); err != nil {
		t.Errorf("pod through the wrapper: %v", err)
	}
	if _, err := c.Discovery().ServerVersion(); err != nil {
		t.Errorf("discovery's ServerVersion: %v", err)
	}
	if n := c.Requests.Load(); n != 2 {
		t.Errorf("Requests = %d after other calls, want 2", n)
	}
}

// A Handler's error code comes back as the API error its Status says.
func TestClientAnswersErrors(t *testing.T) {
	c := New(fake.NewClientset(), func(*http.Request) (int, string) {
		return 403, Status(403, "Forbidden", "pods.metrics.k8s.io is forbidden")
	})
	raw, err := c.Discovery().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/pods").Do(context.Background()).Raw()
	if err == nil {
		t.Fatal("a 403 answer is no error")
	}
	var st metav1.Status
	if err := json.Unmarshal(raw, &st); err != nil || st.Code != 403 || st.Reason != metav1.StatusReasonForbidden {
		t.Errorf("body %q (%v)", raw, err)
	}
}

// PodMetrics is a PodMetricsList whose items name each pod with one
// container's usage.
func TestPodMetrics(t *testing.T) {
	var l struct {
		Kind, APIVersion string
		Items            []struct {
			Metadata   metav1.ObjectMeta `json:"metadata"`
			Containers []struct {
				Name  string
				Usage map[string]resource.Quantity
			}
		}
	}
	pods := map[string][2]string{"u1": {"30m", "64Mi"}, "u2": {"1", "1Gi"}, "u3": {"250m", "10Ki"}}
	if err := json.Unmarshal([]byte(PodMetrics(pods)), &l); err != nil {
		t.Fatalf("%v in %s", err, PodMetrics(pods))
	}
	if l.Kind != "PodMetricsList" || l.APIVersion != "metrics.k8s.io/v1beta1" || len(l.Items) != len(pods) {
		t.Fatalf("PodMetrics = %+v", l)
	}
	for _, it := range l.Items {
		want, ok := pods[it.Metadata.Name]
		if !ok || len(it.Containers) != 1 {
			t.Errorf("item %+v", it)
			continue
		}
		u := it.Containers[0].Usage
		if cpu, mem := u["cpu"], u["memory"]; cpu.Cmp(resource.MustParse(want[0])) != 0 || mem.Cmp(resource.MustParse(want[1])) != 0 {
			t.Errorf("%s: usage %v, want %v", it.Metadata.Name, u, want)
		}
		delete(pods, it.Metadata.Name)
	}
	if err := json.Unmarshal([]byte(PodMetrics(nil)), &l); err != nil || len(l.Items) != 0 {
		t.Errorf("PodMetrics(nil) = %s (%v)", PodMetrics(nil), err)
	}
}

func TestStatus(t *testing.T) {
	var st metav1.Status
	if err := json.Unmarshal([]byte(Status(404, "NotFound", "the server could not find it")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Code != 404 ||
		st.Reason != metav1.StatusReasonNotFound || st.Message != "the server could not find it" {
		t.Errorf("Status = %+v", st)
	}
}
