package kube

import (
	"context"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WhoAmI asks the API server who the caller is (a SelfSubjectReview, which
// every authenticated user may make). fallback (the kubeconfig's user name)
// answers when the server cannot, marked as unverified: a release's actor
// must never pass a name the kubeconfig chose for the server's word.
func WhoAmI(ctx context.Context, client kubernetes.Interface, fallback string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err == nil && r.Status.UserInfo.Username != "" {
		return r.Status.UserInfo.Username
	}
	if fallback != "" {
		return fallback + " (unverified)"
	}
	return "unknown"
}
