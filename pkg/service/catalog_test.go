package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/inputerr"
)

// customPlan is the built-in plan published under another name.
func customPlan(name string) []byte {
	return []byte(strings.Replace(string(postgresPlan), "\nname: postgres\n", "\nname: "+name+"\n", 1))
}

func publishedPlans(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: PlansName, Namespace: clustersettings.Namespace}, Data: data}
}

// Published plans join the built-in ones; one that does not parse, or
// that takes a built-in plan's name or another key's, is set aside with
// why, never fatal.
func TestReadCatalogSetsAsideBrokenPlans(t *testing.T) {
	c := fake.NewClientset(publishedPlans(map[string]string{
		"mysql":    string(customPlan("mysql")),
		"broken":   "name: [",
		"postgres": string(postgresPlan),
		"redis":    string(customPlan("other")),
	}))
	cat, err := ReadCatalog(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := cat.Plan("mysql"); err != nil || p.Name != "mysql" || !cat.Published["mysql"] {
		t.Errorf("the published plan: %v %v", p, err)
	}
	for _, name := range []string{"broken", "postgres", "redis"} {
		if cat.Broken[name] == "" {
			t.Errorf("plan %q is not set aside: %v", name, cat.Broken)
		}
	}
	var names, sources []string
	for _, i := range cat.Infos() {
		names = append(names, i.Name)
		sources = append(sources, i.Source)
		if i.Default != "15" || len(i.Versions) == 0 || i.Type != "postgresql" {
			t.Errorf("info %+v", i)
		}
	}
	if strings.Join(names, ",") != "mysql,postgres" || strings.Join(sources, ",") != "cluster,builtin" {
		t.Errorf("infos %v %v", names, sources)
	}
	if _, err := cat.Plan("oracle"); !inputerr.Is(err) || !strings.Contains(err.Error(), "postgres, mysql") || strings.Contains(err.Error(), "may not read") {
		t.Errorf("a missing plan: %v", err)
	}
}

// A user who may not read the published plans gets the built-in ones, and
// a missing plan says why it may still exist.
func TestReadCatalogForbidden(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, PlansName, nil)
	})
	cat, err := ReadCatalog(context.Background(), c)
	if err != nil || !cat.Unreadable {
		t.Fatalf("catalog %+v %v", cat, err)
	}
	if _, err := cat.Plan("postgres"); err != nil {
		t.Errorf("the built-in plan: %v", err)
	}
	if _, err := cat.Plan("mysql"); !inputerr.Is(err) || !strings.Contains(err.Error(), "may not read") {
		t.Errorf("a plan that may be published: %v", err)
	}
	c.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	if _, err := ReadCatalog(context.Background(), c); err == nil {
		t.Error("a server error is not said")
	}
}

func TestPublishAndUnpublish(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	p, err := Publish(ctx, c, customPlan("mysql"))
	if err != nil || p.Name != "mysql" {
		t.Fatalf("publish: %v %v", p, err)
	}
	if _, err := Publish(ctx, c, customPlan("redis")); err != nil {
		t.Fatalf("a second plan: %v", err)
	}
	cm, err := c.CoreV1().ConfigMaps(clustersettings.Namespace).Get(ctx, PlansName, metav1.GetOptions{})
	if err != nil || cm.Data["mysql"] == "" || cm.Data["redis"] == "" {
		t.Fatalf("the plans ConfigMap: %v %v", cm, err)
	}
	role, err := c.RbacV1().Roles(clustersettings.Namespace).Get(ctx, plansReaderName, metav1.GetOptions{})
	if err != nil || len(role.Rules) != 1 || strings.Join(role.Rules[0].ResourceNames, ",") != PlansName || strings.Join(role.Rules[0].Verbs, ",") != "get" {
		t.Errorf("the readers' Role lets read more than the plans: %+v %v", role, err)
	}
	rb, err := c.RbacV1().RoleBindings(clustersettings.Namespace).Get(ctx, plansReaderName, metav1.GetOptions{})
	if err != nil || rb.Subjects[0].Name != "system:authenticated" {
		t.Errorf("the readers' RoleBinding: %+v %v", rb, err)
	}
	cat, _ := ReadCatalog(ctx, c)
	if !cat.Published["mysql"] || !cat.Published["redis"] {
		t.Errorf("published %v", cat.Published)
	}

	if err := Unpublish(ctx, c, "mysql"); err != nil {
		t.Fatal(err)
	}
	cm, _ = c.CoreV1().ConfigMaps(clustersettings.Namespace).Get(ctx, PlansName, metav1.GetOptions{})
	if _, ok := cm.Data["mysql"]; ok || cm.Data["redis"] == "" {
		t.Errorf("after unpublish: %v", cm.Data)
	}
}

// What cannot be published or unpublished is refused as an input error
// and changes nothing.
func TestPublishRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	for name, run := range map[string]func(*fake.Clientset) error{
		"a built-in plan's name": func(c *fake.Clientset) error { _, err := Publish(ctx, c, postgresPlan); return err },
		"a plan that does not parse": func(c *fake.Clientset) error {
			_, err := Publish(ctx, c, []byte("name: [")) //nolint:gocritic
			return err
		},
		"unpublish a plan not published": func(c *fake.Clientset) error { return Unpublish(ctx, c, "mysql") },
		"unpublish a bad name":           func(c *fake.Clientset) error { return Unpublish(ctx, c, "My Plan") },
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset(publishedPlans(map[string]string{"redis": string(customPlan("redis"))}))
			if err := run(c); !inputerr.Is(err) {
				t.Fatalf("got %v, want an input error", err)
			}
			cm, _ := c.CoreV1().ConfigMaps(clustersettings.Namespace).Get(ctx, PlansName, metav1.GetOptions{})
			if len(cm.Data) != 1 || cm.Data["redis"] == "" {
				t.Errorf("the plans changed: %v", cm.Data)
			}
			if roles, _ := c.RbacV1().Roles(clustersettings.Namespace).List(ctx, metav1.ListOptions{}); len(roles.Items) != 0 {
				t.Errorf("a refused publish made a Role")
			}
		})
	}
}
