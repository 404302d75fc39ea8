// Package metricstest serves the metrics API to tests that use a fake
// clientset, whose discovery has no REST client of its own.
package metricstest

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restfake "k8s.io/client-go/rest/fake"
)

// Handler answers one request to the metrics API: a status code and a body.
type Handler func(r *http.Request) (code int, body string)

// Client is a clientset whose discovery REST client answers with a Handler,
// and counts the requests it got.
type Client struct {
	kubernetes.Interface
	disc     discoveryWithREST
	Requests atomic.Int32
}

// New wraps cs so the metrics API answers with h.
func New(cs kubernetes.Interface, h Handler) *Client {
	c := &Client{Interface: cs}
	c.disc = discoveryWithREST{DiscoveryInterfaces: cs.Discovery(), rc: &restfake.RESTClient{
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		Client: restfake.CreateHTTPClient(func(r *http.Request) (*http.Response, error) {
			c.Requests.Add(1)
			code, body := h(r)
			return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewBufferString(body)), Request: r}, nil
		}),
	}}
	return c
}

// Discovery is the clientset's discovery with the answering REST client.
func (c *Client) Discovery() discovery.DiscoveryInterfaces { return c.disc }

type discoveryWithREST struct {
	discovery.DiscoveryInterfaces
	rc rest.Interface
}

func (d discoveryWithREST) RESTClient() rest.Interface { return d.rc }

// PodMetrics is a PodMetricsList body: pod name -> [cpu, memory] quantities
// of its one container.
func PodMetrics(pods map[string][2]string) string {
	var b bytes.Buffer
	b.WriteString(`{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","items":[`)
	first := true
	for name, u := range pods {
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(`{"metadata":{"name":"` + name + `"},"containers":[{"name":"c","usage":{"cpu":"` + u[0] + `","memory":"` + u[1] + `"}}]}`)
	}
	b.WriteString("]}")
	return b.String()
}

// Status is a metav1.Status body with code and reason, as the apiserver
// answers a refused request.
func Status(code int, reason, message string) string {
	return `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"` + reason + `","message":"` + message + `","code":` + strconv.Itoa(code) + `}`
}
