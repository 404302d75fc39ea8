package nodecontainer

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/node"
)

func TestDaemonSetName(t *testing.T) {
	for _, c := range []struct{ name, pool, want string }{
		{"agent", "", "nc-agent"},
		{"agent", "gpu", "nc-agent-gpu"},
	} {
		if got := DaemonSetName(c.name, c.pool); got != c.want {
			t.Errorf("DaemonSetName(%q, %q) = %q, want %q", c.name, c.pool, got, c.want)
		}
	}
	// Pools that are not valid name parts get a stable hash.
	a, b := DaemonSetName("agent", "GPU_a100"), DaemonSetName("agent", "GPU_a100")
	if a != b || !strings.HasPrefix(a, "nc-agent-p") || a == DaemonSetName("agent", "GPU_a101") {
		t.Errorf("hashed names: %q %q", a, b)
	}
	long := strings.Repeat("p", 63)
	if got := DaemonSetName("agent", long); len(got) > 63 {
		t.Errorf("name %q is too long", got)
	}
}

func TestValidate(t *testing.T) {
	ok := AddOptions{Name: "agent", Image: "registry/agent:1"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []AddOptions{
		{Name: "Agent", Image: "x"},
		{Name: strings.Repeat("a", 31), Image: "x"},
		{Name: "agent", Image: ""},
		{Name: "agent", Image: "two words"},
		{Name: "agent", Image: "x", Pool: "bad pool"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v should be refused", bad)
		}
	}
	env, err := ParseEnv([]string{"A=1", "B=x=y", "A=2"})
	if err != nil || len(env) != 2 || env[0].Value != "2" || env[1].Value != "x=y" {
		t.Fatalf("ParseEnv: %v %v", env, err)
	}
	for _, bad := range []string{"novalue", "=1", "1A=x"} {
		if _, err := ParseEnv([]string{bad}); err == nil {
			t.Errorf("--env %q should be refused", bad)
		}
	}
}

func TestRender(t *testing.T) {
	ds := render(AddOptions{Name: "agent", Image: "img", Pool: "gpu", Privileged: true, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}, "ops", nil)
	spec := ds.Spec.Template.Spec
	if spec.NodeSelector[kube.LabelPool] != "gpu" || ds.Spec.Selector.MatchLabels[kube.LabelPool] != "gpu" {
		t.Fatalf("pool version must select the pool's nodes and only its own pods: %+v %+v", spec.NodeSelector, ds.Spec.Selector)
	}
	c := spec.Containers[0]
	if !*c.SecurityContext.Privileged || c.Env[0].Name != "A" || c.ImagePullPolicy != "" {
		t.Fatalf("container %+v; the pull policy is left to Kubernetes' default so moving tags re-pull", c)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != node.TaintDisabled {
		t.Fatalf("node containers run on disabled nodes: %+v", spec.Tolerations)
	}
	def := render(AddOptions{Name: "agent", Image: "img"}, "ops", []string{"gpu"})
	req := def.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
	if req.Key != kube.LabelPool || req.Operator != corev1.NodeSelectorOpNotIn || req.Values[0] != "gpu" {
		t.Fatalf("default version must leave pools with their own: %+v", req)
	}
	if def.Spec.Selector.MatchExpressions[0].Operator != metav1.LabelSelectorOpDoesNotExist {
		t.Fatalf("default version must not select pool versions' pods: %+v", def.Spec.Selector)
	}
}

func TestAddUpgradeRemove(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	c := &Client{Kube: client, Namespace: "ops", Cluster: "prod"}
	ct, created, err := c.Add(ctx, AddOptions{Name: "agent", Image: "img:1"})
	if err != nil || !created || ct.DaemonSet != "nc-agent" {
		t.Fatalf("add: %+v %v %v", ct, created, err)
	}
	if _, created, err = c.Add(ctx, AddOptions{Name: "agent", Image: "img:2"}); err != nil || created {
		t.Fatalf("adding again updates: %v %v", created, err)
	}
	if _, _, err = c.Add(ctx, AddOptions{Name: "agent", Image: "img:gpu", Pool: "gpu"}); err != nil {
		t.Fatal(err)
	}
	def, err := client.AppsV1().DaemonSets("ops").Get(ctx, "nc-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if def.Spec.Template.Spec.Containers[0].Image != "img:2" || def.Spec.Template.Spec.Affinity == nil {
		t.Fatalf("default version: image %s, affinity %+v; want img:2 and gpu excluded", def.Spec.Template.Spec.Containers[0].Image, def.Spec.Template.Spec.Affinity)
	}
	list, err := c.List(ctx)
	if err != nil || len(list) != 2 || list[0].Pool != "" || list[1].Pool != "gpu" {
		t.Fatalf("list: %+v %v", list, err)
	}

	up, err := c.Upgrade(ctx, "agent", "gpu", "img:gpu2")
	if err != nil || len(up) != 1 || up[0].Image != "img:gpu2" {
		t.Fatalf("upgrade gpu: %+v %v", up, err)
	}
	up, err = c.Upgrade(ctx, "agent", "", "")
	if err != nil || len(up) != 2 {
		t.Fatalf("restart all: %+v %v", up, err)
	}
	def, _ = client.AppsV1().DaemonSets("ops").Get(ctx, "nc-agent", metav1.GetOptions{})
	if def.Spec.Template.Annotations[annotationRestartedAt] == "" {
		t.Fatal("upgrade without an image must roll the pods")
	}
	if _, err := c.Upgrade(ctx, "nope", "", ""); err == nil {
		t.Fatal("upgrading an unknown node container should fail")
	}

	if _, err := c.Remove(ctx, "agent", "gpu", nil); err != nil {
		t.Fatal(err)
	}
	def, _ = client.AppsV1().DaemonSets("ops").Get(ctx, "nc-agent", metav1.GetOptions{})
	if def.Spec.Template.Spec.Affinity != nil {
		t.Fatalf("with the gpu version gone, the default runs everywhere again: %+v", def.Spec.Template.Spec.Affinity)
	}
	if _, err := c.Remove(ctx, "agent", "", nil); err != nil {
		t.Fatal(err)
	}
	if list, _ := c.List(ctx); len(list) != 0 {
		t.Fatalf("left after remove: %+v", list)
	}
}
