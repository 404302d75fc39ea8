// Package kube is the Kubernetes layer shared by tug's commands.
package kube

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Error is a client-go error rewritten as a sentence that says what failed
// and what to do next. The original stays reachable through errors.As/Is.
type Error struct {
	Msg string
	Err error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// TranslateError rewrites errors from the API server, the network and
// kubeconfig loading into messages for people. Errors it does not recognise
// are returned unchanged, and so are ones already translated. Call it where
// an error leaves the Kubernetes layer; main calls it once more as a
// backstop.
func TranslateError(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var done *Error
	if errors.As(err, &done) {
		return err
	}
	if msg := translate(err); msg != "" {
		return &Error{Msg: msg, Err: err}
	}
	return err
}

func translate(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return statusMessage(status.Status())
	}
	// Before the network: client-go reports a credential plugin's failure
	// inside the url.Error of the request it could not authenticate.
	if msg := credentialPluginMessage(err); msg != "" {
		return msg
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return networkMessage(uerr)
	}
	return kubeconfigMessage(err)
}

// client-go's exec authenticator (plugin/pkg/client/auth/exec) reports these
// as plain strings, so the message is all there is to match.
var (
	pluginMissing = regexp.MustCompile(`exec: executable (\S+) not found`)
	pluginFailed  = regexp.MustCompile(`exec: executable (\S+) failed with exit code (\d+)`)
)

func credentialPluginMessage(err error) string {
	msg := err.Error()
	if m := pluginMissing.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("the kubeconfig's credential plugin %s is not installed; install it, put it on PATH, or check --context and --user", m[1])
	}
	if m := pluginFailed.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("the kubeconfig's credential plugin %s failed with exit code %s; run it by hand to see why, or check --context and --user", m[1], m[2])
	}
	return ""
}

var (
	// The name ends where clientcmd's list of problems goes on (", ") or
	// closes ("]"): "[context was not found for specified context: nope,
	// cluster has no server defined]" is about context "nope".
	contextNotFound = regexp.MustCompile(`context was not found for specified context: (.+?)(?:, |\]|$)`)
	// clientcmd's errors for a --context, --user or --cluster that the
	// kubeconfig does not define.
	entryMissing = regexp.MustCompile(`(context|auth info|cluster) "([^"]*)" does not exist`)
)

func kubeconfigMessage(err error) string {
	if m := entryMissing.FindStringSubmatch(err.Error()); m != nil {
		switch m[1] {
		case "context":
			return fmt.Sprintf("context %q not found in the kubeconfig; see 'kubectl config get-contexts'", m[2])
		case "auth info":
			return fmt.Sprintf("user %q not found in the kubeconfig; check --user", m[2])
		default:
			return fmt.Sprintf("cluster %q not found in the kubeconfig; check --cluster", m[2])
		}
	}
	switch {
	case clientcmd.IsEmptyConfig(err):
		return "no kubeconfig found; set KUBECONFIG, pass --kubeconfig, or create ~/.kube/config"
	case clientcmd.IsContextNotFound(err):
		if m := contextNotFound.FindStringSubmatch(err.Error()); m != nil {
			return fmt.Sprintf("context %q not found in the kubeconfig; see 'kubectl config get-contexts'", m[1])
		}
		return "no context selected; pass --context or run 'kubectl config use-context'"
	case clientcmd.IsConfigurationInvalid(err):
		return fmt.Sprintf("invalid kubeconfig: %s; check --context or KUBECONFIG",
			strings.TrimPrefix(err.Error(), "invalid configuration: "))
	}
	var perr *fs.PathError
	if errors.As(err, &perr) && errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("kubeconfig %q not found; check --kubeconfig or KUBECONFIG", perr.Path)
	}
	return ""
}

// The API server's RBAC denial, as written by k8s.io/apiserver's
// responsewriters.forbiddenMessage.
var forbiddenRE = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]*)" in API group "([^"]*)"(?: in the namespace "([^"]*)"| at the cluster scope)`)

func statusMessage(s metav1.Status) string {
	msg := lowerFirst(s.Message)
	switch {
	case s.Code == 403 || s.Reason == metav1.StatusReasonForbidden:
		if m := forbiddenRE.FindStringSubmatch(s.Message); m != nil {
			user, verb, group := m[1], m[2], m[4]
			resource, sub, _ := strings.Cut(m[3], "/")
			return ForbiddenMessage(user, verb, ResourceName(group, resource, sub), m[5])
		}
		// Admission (quota, pod security, webhooks) also answers 403; its
		// message is already a sentence.
		return msg
	case s.Code == 401 || s.Reason == metav1.StatusReasonUnauthorized:
		return "the cluster rejected your credentials (401 unauthorized); log in again or check --context and --user"
	case s.Code == 404 && s.Details != nil && s.Details.Kind == "namespaces" && s.Details.Group == "":
		// Creating anything in a namespace that is not there.
		return NamespaceMissingMessage(s.Details.Name)
	case s.Code == 404 && s.Details == nil:
		return fmt.Sprintf("not found: %s; the cluster may not serve this API", msg)
	case s.Code == 404:
		// The server already says what: `deployments.apps "web" not found`.
		return msg
	case s.Reason == metav1.StatusReasonTimeout || s.Reason == metav1.StatusReasonServerTimeout ||
		s.Code == 429 || s.Code == 503:
		return fmt.Sprintf("the cluster is busy: %s; try again", msg)
	}
	return msg
}

// NamespaceMissingMessage is the sentence for a namespace that does not
// exist.
func NamespaceMissingMessage(ns string) string {
	return fmt.Sprintf("namespace %q does not exist; create it with 'kubectl create namespace %s', or pick another with -n", ns, ns)
}

// CheckNamespace says, as a translated NotFound error, when namespace does
// not exist; nil when it does or when asking is not allowed (a user with a
// namespace Role may not read namespaces) or fails: it explains an empty
// answer, it is never what fails a command.
func CheckNamespace(ctx context.Context, client kubernetes.Interface, namespace string) error {
	_, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return TranslateError(err)
	}
	return nil
}

// IsRBACDenial reports whether err is the API server's authorizer refusing
// a request (not admission, which also answers 403).
func IsRBACDenial(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	return (s.Code == 403 || s.Reason == metav1.StatusReasonForbidden) && forbiddenRE.MatchString(s.Message)
}

// ForbiddenMessage is the sentence for a missing permission; namespace ""
// means cluster scope.
func ForbiddenMessage(user, verb, resource, namespace string) string {
	where := "at cluster scope"
	if namespace != "" {
		where = fmt.Sprintf("in namespace %q", namespace)
	}
	who := fmt.Sprintf("user %q", user)
	hint := "ask an admin for this permission or check 'tug doctor'"
	if user == "system:anonymous" {
		hint = "the cluster did not accept any credentials from your kubeconfig; check --context and --user"
	}
	return fmt.Sprintf("forbidden: %s cannot %s %s %s; %s", who, verb, resource, where, hint)
}

// ResourceName writes a resource the way RBAC rules and kubectl name it:
// "pods", "pods/exec", "deployments.apps", "leases.coordination.k8s.io".
func ResourceName(group, resource, subresource string) string {
	name := resource
	if group != "" {
		name += "." + group
	}
	if subresource != "" {
		name += "/" + subresource
	}
	return name
}

// RequestTimeoutError is a request that got no complete answer within
// --request-timeout.
type RequestTimeoutError struct{ After time.Duration }

func (e *RequestTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %s (--request-timeout)", e.After)
}

// Timeout marks it as a timeout for net and url errors' Timeout().
func (e *RequestTimeoutError) Timeout() bool { return true }

func networkMessage(uerr *url.Error) string {
	server := uerr.URL
	if u, err := url.Parse(uerr.URL); err == nil && u.Host != "" {
		server = u.Scheme + "://" + u.Host
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	if errors.As(uerr, &unknownCA) || errors.As(uerr, &hostname) || errors.As(uerr, &invalid) {
		return fmt.Sprintf("cannot verify the certificate of the cluster at %s: %s; check the certificate authority in the kubeconfig or --certificate-authority",
			server, innermost(uerr))
	}
	var rt *RequestTimeoutError
	if errors.As(uerr, &rt) {
		return fmt.Sprintf("the cluster at %s did not answer within %s; check your network and --context, or allow longer with --request-timeout", server, rt.After)
	}
	if uerr.Timeout() {
		return fmt.Sprintf("the cluster at %s did not answer in time; check your network, --context or --request-timeout", server)
	}
	return fmt.Sprintf("cannot reach the cluster at %s: %s; check --context or KUBECONFIG", server, networkReason(uerr))
}

func networkReason(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve %q", dnsErr.Name)
	}
	return innermost(err)
}

// innermost is the message of the deepest wrapped error: "EOF" rather than
// `Get "https://...": EOF`.
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	if c := s[0]; c >= 'A' && c <= 'Z' && !(len(s) > 1 && s[1] >= 'A' && s[1] <= 'Z') {
		return string(c+'a'-'A') + s[1:]
	}
	return s
}
