package kube

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
)

// forbidden builds the error the API server returns for an RBAC denial.
func forbidden(gr schema.GroupResource, name, reason string) error {
	return apierrors.NewForbidden(gr, name, errors.New(reason))
}

func TestTranslateError(t *testing.T) {
	dial := func(host string, err error) error {
		return &url.Error{Op: "Get", URL: "https://" + host + "/api/v1/namespaces/dev/pods?limit=500",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{
			name: "forbidden in a namespace",
			err:  forbidden(schema.GroupResource{Resource: "pods"}, "", `User "bob" cannot list resource "pods" in API group "" in the namespace "dev"`),
			want: `forbidden: user "bob" cannot list pods in namespace "dev"; ask an admin for this permission or check 'tug doctor'`,
		},
		{
			name: "forbidden with a group and a name, RBAC reason appended",
			err:  forbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web-web", `User "bob" cannot patch resource "deployments" in API group "apps" in the namespace "dev": RBAC: role "x" not found`),
			want: `forbidden: user "bob" cannot patch deployments.apps in namespace "dev"; ask an admin for this permission or check 'tug doctor'`,
		},
		{
			name: "forbidden subresource",
			err:  forbidden(schema.GroupResource{Resource: "pods"}, "web-1", `User "bob" cannot create resource "pods/exec" in API group "" in the namespace "dev"`),
			want: `forbidden: user "bob" cannot create pods/exec in namespace "dev"; ask an admin for this permission or check 'tug doctor'`,
		},
		{
			name: "forbidden at cluster scope",
			err:  forbidden(schema.GroupResource{Resource: "nodes"}, "", `User "bob" cannot list resource "nodes" in API group "" at the cluster scope`),
			want: `forbidden: user "bob" cannot list nodes at cluster scope; ask an admin for this permission or check 'tug doctor'`,
		},
		{
			name: "anonymous",
			err:  forbidden(schema.GroupResource{Resource: "pods"}, "", `User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "dev"`),
			want: `forbidden: user "system:anonymous" cannot list pods in namespace "dev"; the cluster did not accept any credentials from your kubeconfig; check --context and --user`,
		},
		{
			name: "forbidden by admission keeps the server's sentence",
			err:  forbidden(schema.GroupResource{Resource: "pods"}, "web-1", `exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10`),
			want: `pods "web-1" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10`,
		},
		{
			name: "the namespace is missing",
			err:  apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ux-a1"),
			want: `namespace "ux-a1" does not exist; create it with 'kubectl create namespace ux-a1', or pick another with -n`,
		},
		{
			name: "not found",
			err:  apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web-web"),
			want: `deployments.apps "web-web" not found`,
		},
		{
			name: "API not served",
			err:  &apierrors.StatusError{ErrStatus: metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}},
			want: `not found: the server could not find the requested resource; the cluster may not serve this API`,
		},
		{
			name: "unauthorized",
			err:  apierrors.NewUnauthorized(""),
			want: "the cluster rejected your credentials (401 unauthorized); log in again or check --context and --user",
		},
		{
			name: "connection refused",
			err:  dial("127.0.0.1:6443", os.NewSyscallError("connect", syscall.ECONNREFUSED)),
			want: "cannot reach the cluster at https://127.0.0.1:6443: connection refused; check --context or KUBECONFIG",
		},
		{
			name: "unknown host",
			err:  dial("k8s.example:443", &net.DNSError{Err: "no such host", Name: "k8s.example", IsNotFound: true}),
			want: `cannot reach the cluster at https://k8s.example:443: cannot resolve "k8s.example"; check --context or KUBECONFIG`,
		},
		{
			name: "timeout",
			err:  &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/version", Err: context.DeadlineExceeded},
			want: "the cluster at https://10.0.0.1:6443 did not answer in time; check your network, --context or --request-timeout",
		},
		{
			name: "unknown certificate authority",
			err:  &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/version", Err: fmt.Errorf("tls: %w", x509.UnknownAuthorityError{})},
			want: "cannot verify the certificate of the cluster at https://10.0.0.1:6443: x509: certificate signed by unknown authority; check the certificate authority in the kubeconfig or --certificate-authority",
		},
		{
			name: "empty kubeconfig",
			err:  clientcmd.ErrEmptyConfig,
			want: "no kubeconfig found; set KUBECONFIG, pass --kubeconfig, or create ~/.kube/config",
		},
		{
			name: "kubeconfig file missing",
			err:  &os.PathError{Op: "stat", Path: "/nope", Err: syscall.ENOENT},
			want: `kubeconfig "/nope" not found; check --kubeconfig or KUBECONFIG`,
		},
		{
			name: "unknown user",
			err:  errors.New(`auth info "alice" does not exist`),
			want: `user "alice" not found in the kubeconfig; check --user`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := TranslateError(c.err)
			if got.Error() != c.want {
				t.Errorf("got  %q\nwant %q", got.Error(), c.want)
			}
			if !errors.Is(got, c.err) {
				t.Error("the original error is no longer reachable with errors.Is")
			}
			if again := TranslateError(got); again != got {
				t.Error("translating twice changed the error")
			}
		})
	}
}

func TestTranslateErrorLeavesOthersAlone(t *testing.T) {
	for _, err := range []error{nil, context.Canceled, errors.New("something else")} {
		if got := TranslateError(err); got != err {
			t.Errorf("%v changed into %v", err, got)
		}
	}
}

func TestResourceName(t *testing.T) {
	for _, c := range [][4]string{
		{"", "pods", "", "pods"},
		{"", "pods", "eviction", "pods/eviction"},
		{"apps", "deployments", "", "deployments.apps"},
		{"apps", "deployments", "scale", "deployments.apps/scale"},
	} {
		if got := ResourceName(c[0], c[1], c[2]); got != c[3] {
			t.Errorf("ResourceName(%q, %q, %q) = %q, want %q", c[0], c[1], c[2], got, c[3])
		}
	}
}

func TestContextNotFoundKeepsTheListOut(t *testing.T) {
	for msg, want := range map[string]string{
		"invalid configuration: [context was not found for specified context: nope, cluster has no server defined]": "nope",
		"context was not found for specified context: prod-eu":                                                      "prod-eu",
		"invalid configuration: [context was not found for specified context: a.b]":                                 "a.b",
	} {
		m := contextNotFound.FindStringSubmatch(msg)
		if m == nil || m[1] != want {
			t.Errorf("%q: got %v, want %q", msg, m, want)
		}
	}
}
