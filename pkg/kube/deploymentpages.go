package kube

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EachDeployment is EachPod for Deployments: page by page, starting again
// (after restart) when the server dropped the snapshot being paged through.
func EachDeployment(ctx context.Context, client kubernetes.Interface, namespace string, opts metav1.ListOptions, restart func(), each func(*appsv1.Deployment)) error {
	opts.Limit = PageSize
	opts.Continue = ""
	restarted := false
	for {
		list, err := client.AppsV1().Deployments(namespace).List(ctx, opts)
		if err != nil {
			if apierrors.IsResourceExpired(err) && opts.Continue != "" && !restarted {
				restarted = true
				opts.Continue = ""
				restart()
				continue
			}
			return err
		}
		for i := range list.Items {
			each(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// UnitDeploymentSelector selects the Deployments tug runs apps' processes
// with, in any namespace.
func UnitDeploymentSelector() string {
	return LabelManagedBy + "=" + ManagedBy + "," + LabelApp + "," + LabelProcess
}
