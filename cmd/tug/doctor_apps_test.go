package main

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/kube"
)

// An operator with tug-cluster-admin bound but tug-cluster-admin-apps
// missing in one app namespace: doctor --all names that namespace in the
// table and ends with the command that binds it there.
func TestDoctorNamesTheMissingAppsRoleBinding(t *testing.T) {
	setup, kubeconfig := withCluster(t, true)
	rewire := func(f *cli.Factory) {
		setup(f)
		c, _ := f.KubeClientFunc()
		cs := c.(*fake.Clientset)
		l := kube.AppLabels("blog")
		l[kube.LabelProcess] = "web"
		if _, err := cs.AppsV1().Deployments("team-b").Create(context.Background(),
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "blog-web", Namespace: "team-b", Labels: l}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cs.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
			ssar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
			a := ssar.Spec.ResourceAttributes
			ssar.Status.Allowed = a.Namespace != "team-b"
			return true, ssar, nil
		})
	}
	r := execute(t, rewire, "--kubeconfig", kubeconfig, "doctor", "--all")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "leases.coordination.k8s.io (namespace team-b, through tug-cluster-admin-apps)") {
		t.Errorf("the table does not name the namespace:\n%s", r.stdout)
	}
	want := "; in the app namespaces, bind the tug-cluster-admin-apps ClusterRole: kubectl create rolebinding tug-cluster-admin-apps --clusterrole=tug-cluster-admin-apps --user=bob -n team-b\n"
	if !strings.HasPrefix(r.stderr[strings.LastIndex(r.stderr, "error: "):], "error: missing permissions for node;") || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("stderr %q, want the node group and then %q", r.stderr, want)
	}
}
