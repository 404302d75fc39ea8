// Package metrics reads what units use (CPU and memory from the metrics API,
// metrics.k8s.io, that metrics-server serves) and what happened to an app
// (its objects' Kubernetes Events merged with tug's own records).
//
// The metrics API is optional: a cluster may not serve it and a user may not
// be allowed to read it. Neither is an error here: the usage is unknown and
// Unavailable says why, so a listing still prints.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Usage is what one unit (pod) uses now: CPU in millicores, memory in bytes
// (the working set, what the kubelet counts against the limit).
type Usage struct {
	CPU    int64
	Memory int64
}

// Unavailable says why no usage is known: the cluster does not serve the
// metrics API (none registered, or its server down), or the user may not
// read it. Hint is one line for people.
type Unavailable struct {
	Reason string // NotServed, Forbidden or Failed
	Detail string
}

// Reasons for Unavailable.
const (
	NotServed = "NotServed"
	Forbidden = "Forbidden"
	Failed    = "Failed"
)

func (u *Unavailable) Error() string { return "metrics API: " + u.Hint() }

// Hint is the one line a listing prints instead of the usage.
func (u *Unavailable) Hint() string {
	switch u.Reason {
	case NotServed:
		return "cpu and memory unknown: this cluster does not serve the metrics API (metrics.k8s.io; install metrics-server)"
	case Forbidden:
		return "cpu and memory unknown: you may not read the metrics API (list pods.metrics.k8s.io in this namespace)"
	}
	return "cpu and memory unknown: the metrics API failed: " + u.Detail
}

// Source lists PodMetrics: the seam tests replace.
type Source interface {
	// PodUsage returns the usage of the pods in namespace that selector
	// matches, by pod name, with one LIST; an *Unavailable error when the
	// API cannot answer.
	PodUsage(ctx context.Context, namespace, selector string) (map[string]Usage, error)
}

// FromClient is the Source that asks the cluster client talks to, through
// its REST client (no typed metrics client: the JSON is small).
func FromClient(client kubernetes.Interface) Source {
	var rc rest.Interface
	if client != nil && client.Discovery() != nil {
		rc = client.Discovery().RESTClient()
	}
	return restSource{rc: rc}
}

type restSource struct{ rc rest.Interface }

// podMetricsList is the part of metrics.k8s.io/v1beta1 PodMetricsList read here.
type podMetricsList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Containers []struct {
			Usage map[string]resource.Quantity `json:"usage"`
		} `json:"containers"`
	} `json:"items"`
}

func (s restSource) PodUsage(ctx context.Context, namespace, selector string) (map[string]Usage, error) {
	if s.rc == nil {
		return nil, &Unavailable{Reason: NotServed}
	}
	raw, err := s.rc.Get().AbsPath("/apis/metrics.k8s.io/v1beta1", "namespaces", namespace, "pods").
		Param("labelSelector", selector).Do(ctx).Raw()
	if err != nil {
		return nil, classify(err, raw)
	}
	return decode(raw)
}

// decode sums each pod's containers.
func decode(raw []byte) (map[string]Usage, error) {
	var l podMetricsList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, &Unavailable{Reason: Failed, Detail: fmt.Sprintf("decoding PodMetrics: %v", err)}
	}
	out := make(map[string]Usage, len(l.Items))
	for _, it := range l.Items {
		var u Usage
		for _, c := range it.Containers {
			if q, ok := c.Usage["cpu"]; ok {
				u.CPU += q.MilliValue()
			}
			if q, ok := c.Usage["memory"]; ok {
				u.Memory += q.Value()
			}
		}
		out[it.Metadata.Name] = u
	}
	return out, nil
}

// classify maps the API's answer to why the usage is unknown: no APIService
// (404), one whose server is down or not ready (503), no permission (403).
// A context's end stays what it is. body is the answer's: the REST client
// without a group version cannot decode a Status of its own, so its message
// is read here.
func classify(err error, body []byte) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	msg := err.Error()
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Message != "" {
		msg = status.Message
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		switch code := st.Status().Code; {
		case code == http.StatusNotFound, code == http.StatusServiceUnavailable:
			return &Unavailable{Reason: NotServed, Detail: msg}
		case code == http.StatusForbidden && strings.Contains(msg, `"system:anonymous"`):
			// metrics-server saw no user: the API server proxied without
			// its front-proxy certificate
			return &Unavailable{Reason: Failed, Detail: "the API server's aggregation layer is not set up (kube-apiserver --proxy-client-cert-file, --requestheader-client-ca-file): " + msg}
		case code == http.StatusForbidden, code == http.StatusUnauthorized:
			return &Unavailable{Reason: Forbidden, Detail: msg}
		}
	}
	return &Unavailable{Reason: Failed, Detail: msg}
}

// AsUnavailable reports whether err says the usage is unknown (and why).
func AsUnavailable(err error) (*Unavailable, bool) {
	var u *Unavailable
	ok := errors.As(err, &u)
	return u, ok
}
