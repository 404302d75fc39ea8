package service

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// Labels on every object of a service.
const (
	LabelService = "tug.dev/service"
	kindService  = "service"
)

// Params are what a plan's objects are rendered with. No credential value
// is among them: objects name the credentials Secret, so values never
// appear in a spec.
type Params struct {
	Name      string // the service's name
	Namespace string
	// Object is the name of the service's main objects: tug-service-NAME.
	Object            string
	Version           string
	Image             string
	Size              string
	Port              int32
	CredentialsSecret string

	// labels are more labels for every object: a review app's service
	// carries the review's (not a template field).
	labels map[string]string
}

// BindingData is what a plan's binding keys are rendered with.
type BindingData struct {
	Name string
	// Host is the address apps reach the service at: its Service's
	// ClusterIP, which answers with or without cluster DNS.
	Host        string
	Port        int32
	Credentials map[string]string
}

// ObjectName is the name of a service's main objects (its record, its
// StatefulSet and Service in the built-in plan).
func ObjectName(service string) string { return "tug-service-" + service }

// CredentialsSecretName is the Secret holding a service's credentials
// (tug's; a plan whose credentials an operator writes names its own).
func CredentialsSecretName(service string) string { return ObjectName(service) }

// BindingSecretName is the servicebinding.io Secret releases name.
func BindingSecretName(service string) string { return render.ServiceBindingSecret(service) }

// Labels are the labels of every object of service name.
func Labels(name string) map[string]string {
	return map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelKind: kindService, LabelService: name}
}

// Selector selects the objects of a service ("" every service's).
func Selector(name string) string {
	s := kube.KindSelector(kindService, "")
	if name != "" {
		s += "," + LabelService + "=" + name
	}
	return s
}

var funcs = template.FuncMap{
	// userinfo is USER:PASSWORD escaped for a URI's authority.
	"userinfo":   func(u, p string) string { return url.UserPassword(u, p).String() },
	"pathescape": url.PathEscape,
	"upper":      strings.ToUpper,
}

// Render is the plan's objects for p: pure, so a test (and a dry run) sees
// exactly what create applies. Every object gets the service's labels and
// p's namespace; its pod templates get the service label too.
func (pl *Plan) Render(p Params) ([]*unstructured.Unstructured, error) {
	t, err := template.New("objects").Funcs(funcs).Option("missingkey=error").Parse(pl.Objects)
	if err != nil {
		return nil, fmt.Errorf("objects: %v", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("objects: %v", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&buf, 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("objects: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if err := checkObject(u, len(out)); err != nil {
			return nil, err
		}
		u.SetNamespace(p.Namespace)
		u.SetLabels(merged(merged(u.GetLabels(), Labels(p.Name)), p.labels))
		if tl, ok, _ := unstructured.NestedStringMap(m, "spec", "template", "metadata", "labels"); ok {
			_ = unstructured.SetNestedStringMap(m, merged(tl, map[string]string{LabelService: p.Name}), "spec", "template", "metadata", "labels")
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("objects: none")
	}
	return out, nil
}

func checkObject(u *unstructured.Unstructured, i int) error {
	switch {
	case u.GetAPIVersion() == "" || u.GetKind() == "":
		return fmt.Errorf("objects: document %d has no apiVersion or kind", i+1)
	case u.GetName() == "":
		return fmt.Errorf("objects: %s (document %d) has no metadata.name", u.GetKind(), i+1)
	case u.GetNamespace() != "":
		return fmt.Errorf("objects: %s %s names a namespace; a service's objects live in its own", u.GetKind(), u.GetName())
	}
	return nil
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// RenderBinding is the binding's keys and values (servicebinding.io's
// layout: type and provider, then the plan's keys). A plan whose
// credentials tug makes must use only keys it makes; one that reads an
// operator's Secret gets "" for a key the Secret lacks.
func (pl *Plan) RenderBinding(d BindingData) (map[string]string, error) {
	strict := "missingkey=zero"
	if pl.Credentials.Secret == "" {
		strict = "missingkey=error"
	}
	out := map[string]string{"type": pl.Type}
	if pl.Provider != "" {
		out["provider"] = pl.Provider
	}
	for k, src := range pl.Binding {
		t, err := template.New(k).Funcs(funcs).Option(strict).Parse(src)
		if err != nil {
			return nil, fmt.Errorf("binding %s: %v", k, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, d); err != nil {
			return nil, fmt.Errorf("binding %s: %v", k, err)
		}
		out[k] = buf.String()
	}
	return out, nil
}

// renderString renders one template string over p (a Secret's or a
// Service's name in a plan).
func renderString(src string, p Params) (string, error) {
	t, err := template.New("name").Funcs(funcs).Option("missingkey=error").Parse(src)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return "", err
	}
	return buf.String(), nil
}
