package service

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// Where published plans live: one ConfigMap beside the cluster settings,
// a key per plan (its YAML), readable by every authenticated user.
const (
	PlansName       = "tug-service-plans"
	plansReaderName = "tug-service-plans-reader"
)

// Catalog is the plans a cluster offers: tug's own and those an admin
// published.
type Catalog struct {
	Plans []*Plan
	// Published names the plans read from the cluster.
	Published map[string]bool
	// Broken are published plans that do not parse (a newer tug's, or
	// written by hand): name -> why. They are skipped, not fatal.
	Broken map[string]string
	// Unreadable: the user may not read the published plans (Forbidden),
	// so a plan missing here may still be published.
	Unreadable bool
}

// ReadCatalog reads the cluster's plans. A cluster without published
// plans, or whose plans the user may not read, offers the built-in ones.
func ReadCatalog(ctx context.Context, client kubernetes.Interface) (*Catalog, error) {
	c := &Catalog{Plans: Builtin(), Published: map[string]bool{}, Broken: map[string]string{}}
	cm, err := client.CoreV1().ConfigMaps(clustersettings.Namespace).Get(ctx, PlansName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return c, nil
	case apierrors.IsForbidden(err):
		c.Unreadable = true
		return c, nil
	case err != nil:
		return nil, kube.TranslateError(err)
	}
	for _, name := range sortedKeys(cm.Data) {
		p, err := ParsePlan([]byte(cm.Data[name]))
		if err != nil {
			c.Broken[name] = err.Error()
			continue
		}
		if c.builtin(p.Name) || p.Name != name {
			c.Broken[name] = "its name is a built-in plan's, or not its key's"
			continue
		}
		c.Plans = append(c.Plans, p)
		c.Published[p.Name] = true
	}
	return c, nil
}

func (c *Catalog) builtin(name string) bool {
	for _, p := range Builtin() {
		if p.Name == name {
			return true
		}
	}
	return false
}

// Plan is the plan named name, or an input error listing those there are.
func (c *Catalog) Plan(name string) (*Plan, error) {
	names := make([]string, 0, len(c.Plans))
	for _, p := range c.Plans {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	if c.Unreadable {
		return nil, inputerr.Errorf("no plan %q among the built-in plans (%s), and you may not read the cluster's published plans (ConfigMap %s/%s): ask an operator for read access", name, strings.Join(names, ", "), clustersettings.Namespace, PlansName)
	}
	return nil, inputerr.Errorf("no plan %q in this cluster (plans: %s); see 'tug service plans'", name, strings.Join(names, ", "))
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Publish writes plan p into the cluster (an admin's: it creates and
// updates a ConfigMap, a Role and a RoleBinding in kube-public), replacing
// a published plan of that name. A compare-and-swap on the ConfigMap, as
// clustersettings.Write does.
func Publish(ctx context.Context, client kubernetes.Interface, data []byte) (*Plan, error) {
	p, err := ParsePlan(data)
	if err != nil {
		return nil, err
	}
	if (&Catalog{}).builtin(p.Name) {
		return nil, inputerr.Errorf("plan %q is built into tug; publish yours under another name", p.Name)
	}
	err = editPlans(ctx, client, func(d map[string]string) { d[p.Name] = string(data) })
	return p, err
}

// Unpublish removes a published plan. Services made from it keep running:
// each keeps the plan it was made with in its record.
func Unpublish(ctx context.Context, client kubernetes.Interface, name string) error {
	if err := validName("plan", name); err != nil {
		return err
	}
	cm, err := client.CoreV1().ConfigMaps(clustersettings.Namespace).Get(ctx, PlansName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	if err != nil || cm.Data[name] == "" {
		return inputerr.Errorf("no published plan %q; see 'tug service plans'", name)
	}
	return editPlans(ctx, client, func(d map[string]string) { delete(d, name) })
}

func editPlans(ctx context.Context, client kubernetes.Interface, edit func(map[string]string)) error {
	cms := client.CoreV1().ConfigMaps(clustersettings.Namespace)
	for attempt := 0; ; attempt++ {
		cm, err := cms.Get(ctx, PlansName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: PlansName, Namespace: clustersettings.Namespace,
				Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy}}, Data: map[string]string{}}
			edit(cm.Data)
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: kube.FieldManager})
		} else if err == nil {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			edit(cm.Data)
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		}
		if err == nil {
			return ensurePlanReaders(ctx, client)
		}
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5 {
			continue
		}
		return fmt.Errorf("writing the plans (ConfigMap %s/%s): %w", clustersettings.Namespace, PlansName, kube.TranslateError(err))
	}
}

// ensurePlanReaders lets every authenticated user read the plans and
// nothing else of kube-public.
func ensurePlanReaders(ctx context.Context, client kubernetes.Interface) error {
	ns := clustersettings.Namespace
	labels := map[string]string{kube.LabelManagedBy: kube.ManagedBy}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: plansReaderName, Namespace: ns, Labels: labels},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{PlansName}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: plansReaderName, Namespace: ns, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: plansReaderName},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}}}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the plan is published, but letting every user read it failed (Role %s/%s): %w", ns, plansReaderName, kube.TranslateError(err))
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the plan is published, but letting every user read it failed (RoleBinding %s/%s): %w", ns, plansReaderName, kube.TranslateError(err))
	}
	return nil
}

// PlanInfo is one plan as 'tug service plans' shows it (docs/output.md).
type PlanInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Versions    []string `json:"versions"`
	Default     string   `json:"defaultVersion"`
	Type        string   `json:"type"`
	// Source is "builtin" or "cluster" (published by an admin).
	Source string `json:"source"`
}

// Infos lists the catalog's plans by name.
func (c *Catalog) Infos() []PlanInfo {
	out := make([]PlanInfo, 0, len(c.Plans))
	for _, p := range c.Plans {
		def, _ := p.Version("")
		src := "builtin"
		if c.Published[p.Name] {
			src = "cluster"
		}
		out = append(out, PlanInfo{Name: p.Name, Description: p.Description, Versions: p.Versions, Default: def, Type: p.Type, Source: src})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
