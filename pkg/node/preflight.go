package node

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// PermissionError says the user may not do something removal needs; it is
// found before anything changes.
type PermissionError struct {
	Node    string
	Missing []string // "create pods/eviction in all namespaces"
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("forbidden: removing node %q needs permission to %s; nothing was changed; ask an admin for the tug-cluster-admin role (docs/rbac) or check 'tug doctor'",
		e.Node, strings.Join(e.Missing, ", "))
}

type access struct {
	verb, group, resource, sub string
	allNamespaces              bool
}

func (a access) String() string {
	where := "at cluster scope"
	if a.allNamespaces {
		where = "in all namespaces"
	}
	return fmt.Sprintf("%s %s %s", a.verb, kube.ResourceName(a.group, a.resource, a.sub), where)
}

// preflight asks the API server (SelfSubjectAccessReviews, which anyone
// may make) whether the user may do what removal needs, so a missing
// permission stops it before the node is cordoned rather than halfway.
// A review that cannot be made is no verdict: removal then finds out as
// it goes.
func preflight(ctx context.Context, client kubernetes.Interface, node string, o RemoveOptions) error {
	var need []access
	if o.NoRebalance {
		need = []access{{verb: "delete", resource: "nodes"}}
	} else {
		need = []access{
			{verb: "update", resource: "nodes"},
			{verb: "list", resource: "pods", allNamespaces: true},
			{verb: "create", resource: "pods", sub: "eviction", allNamespaces: true},
		}
		if !o.KeepNode {
			need = append(need, access{verb: "delete", resource: "nodes"})
		}
	}
	var missing []string
	for _, a := range need {
		r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil
		}
		if !r.Status.Allowed {
			missing = append(missing, a.String())
		}
	}
	if len(missing) > 0 {
		return &PermissionError{Node: node, Missing: missing}
	}
	return nil
}
