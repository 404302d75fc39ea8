package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PageSize is how many objects one page of a long LIST holds: memory stays
// bounded by a page, not by the namespace's size (kubectl uses 500 too).
const PageSize = 500

// EachPod lists the pods matching opts page by page (limit and continue)
// and calls each for every pod; a page is let go before the next is read.
// When the server has dropped the snapshot being paged through (410 Gone:
// the list took longer than etcd keeps history), it starts again from the
// first page after calling restart, so the caller can drop what it kept.
func EachPod(ctx context.Context, client kubernetes.Interface, namespace string, opts metav1.ListOptions, restart func(), each func(*corev1.Pod)) error {
	opts.Limit = PageSize
	opts.Continue = ""
	restarted := false
	for {
		list, err := client.CoreV1().Pods(namespace).List(ctx, opts)
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
