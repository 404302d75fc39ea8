// Package service holds backing services (a database an app uses): the
// plans a cluster offers, as data; a service's record, credentials and
// binding; and the actions on them (create, remove, bind). A plan is a
// declaration (the objects to render, where the credentials come from, the
// keys of a binding, the commands to connect, dump and restore): tug ships
// one (postgres), and an admin publishes more in the cluster
// ('tug cluster plans set -f plan.yaml'), read by every user like the
// cluster settings.
package service

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"tug.dev/tug/pkg/inputerr"
)

// Plan is what a service of one kind is made of. Its JSON/YAML shape is
// documented in docs/services.md.
type Plan struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Type is the binding's type (servicebinding.io): postgresql, redis, ...
	// The binding Secret's type is servicebinding.io/TYPE.
	Type     string `json:"type"`
	Provider string `json:"provider,omitempty"`
	// EnvPrefix names the variables a binding without --as gives the app:
	// DATABASE gives DATABASE_URL, DATABASE_HOST, ...
	EnvPrefix string   `json:"envPrefix"`
	Versions  []string `json:"versions"`
	// DefaultVersion is the version a create without --version gets ("":
	// the first of Versions).
	DefaultVersion string `json:"defaultVersion,omitempty"`
	// Images is each version's image when the cluster settings name none
	// (services.PLAN.image[.VERSION]).
	Images      map[string]string `json:"images,omitempty"`
	DefaultSize string            `json:"defaultSize,omitempty"`
	Port        int32             `json:"port"`
	// Container is the unit's container that connect, dump and restore
	// run in.
	Container   string      `json:"container,omitempty"`
	Credentials Credentials `json:"credentials"`
	// Binding maps each key of the binding to a template over BindingData;
	// type and provider are added from the plan.
	Binding map[string]string `json:"binding"`
	// HostService names (a template over Params) the Kubernetes Service
	// apps reach the service through ("": tug-service-NAME); an operator's
	// plan names the one its operator makes.
	HostService string `json:"hostService,omitempty"`
	// DataPath is where the unit mounts its data volume, for 'service info'
	// to say how much is used (df in the unit); "": not shown.
	DataPath string `json:"dataPath,omitempty"`
	// Commands run in the service's unit (argv); empty: not offered.
	Connect []string `json:"connect,omitempty"`
	Dump    []string `json:"dump,omitempty"`
	Restore []string `json:"restore,omitempty"`
	// ScheduledDump is the command a scheduled backup runs (in a pod of
	// the service's image, the binding's keys as its environment, the
	// backups volume at /backups, $KEEP the dumps to keep); empty: the plan
	// offers no schedule.
	ScheduledDump []string `json:"scheduledDump,omitempty"`
	// Rotate says how to rotate the credentials, when the plan can.
	Rotate *RotateSpec `json:"rotate,omitempty"`
	// Objects is a template (over Params) of the YAML documents to apply.
	Objects string `json:"objects"`
}

// Credentials say where a service's credentials come from: tug makes a
// Secret with Values and a random value for each key of Generate; or,
// when Secret is set (a template over Params), another controller (an
// operator) writes that Secret and tug only reads it.
type Credentials struct {
	Generate []string          `json:"generate,omitempty"`
	Values   map[string]string `json:"values,omitempty"`
	Secret   string            `json:"secret,omitempty"`
}

// RotateSpec is how new credentials replace the old with no moment when an
// app's are refused: two login roles take turns. Grant runs in the unit
// with the new username and password on its stdin (a line each); every
// bound app is rolled out with them; then Revoke runs with the old
// username on its stdin. Values never go in an argument.
//
// RevokeAfter, when a plan has it, has the database itself refuse the
// old login a number of seconds from now (username, then the seconds, on
// its stdin): a rotate then returns as soon as every app serves with the
// new login, and the old is refused once its last unit must have
// stopped, with no wait for those units and no process left behind.
// Grant must then also lift such a deadline from the login it is given.
type RotateSpec struct {
	Usernames   []string `json:"usernames"`
	Grant       []string `json:"grant"`
	Revoke      []string `json:"revoke"`
	RevokeAfter []string `json:"revokeAfter,omitempty"`
}

// MaxNameLen bounds service and plan names so every derived name stays
// valid: the StatefulSet tug-service-NAME and its pods' revision label.
const MaxNameLen = 30

var (
	nameRE   = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	prefixRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	keyRE    = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// ValidateName checks a service's name; its error is an input error. A
// name ending as the objects of another service do (db-binding is
// db's binding Secret, tug-service-db-binding) is refused: the two
// services' objects would collide.
func ValidateName(name string) error {
	if err := validName("service", name); err != nil {
		return err
	}
	for _, suffix := range []string{"-binding", "-data", "-backup", "-backups"} {
		if strings.HasSuffix(name, suffix) {
			return inputerr.Errorf("invalid service name %q: a name ending in %s would collide with the objects of service %q; choose another", name, suffix, strings.TrimSuffix(name, suffix))
		}
	}
	return nil
}

func validName(what, name string) error {
	switch {
	case name == "":
		return inputerr.Errorf("%s name is empty", what)
	case len(name) > MaxNameLen:
		return inputerr.Errorf("%s name %q is %d characters; the limit is %d", what, name, len(name), MaxNameLen)
	case !nameRE.MatchString(name):
		return inputerr.Errorf("invalid %s name %q: use lower-case letters, digits and '-', starting with a letter and ending with a letter or digit", what, name)
	}
	return nil
}

// ValidatePrefix checks a binding's --as: the start of the variables'
// names (PREFIX_URL, PREFIX_HOST, ...).
func ValidatePrefix(p string) error {
	if !prefixRE.MatchString(p) || len(p) > 40 {
		return inputerr.Errorf("invalid --as %q: use upper-case letters, digits and '_', starting with a letter (e.g. ORDERS_DB gives ORDERS_DB_URL)", p)
	}
	return nil
}

//go:embed plans/postgres.yaml
var postgresPlan []byte

// Builtin are the plans tug ships.
func Builtin() []*Plan {
	p, err := ParsePlan(postgresPlan)
	if err != nil {
		panic("the built-in postgres plan is invalid: " + err.Error()) // a test proves it is not
	}
	return []*Plan{p}
}

// ParsePlan reads and validates a plan (YAML or JSON); its error is an
// input error that says what is wrong.
func ParsePlan(data []byte) (*Plan, error) {
	var p Plan
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, inputerr.Errorf("invalid plan: %v", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Version is the version a create asks for ("" the default), or an input
// error naming the versions there are.
func (p *Plan) Version(v string) (string, error) {
	if v == "" {
		if p.DefaultVersion != "" {
			return p.DefaultVersion, nil
		}
		return p.Versions[0], nil
	}
	if !slices.Contains(p.Versions, v) {
		return "", inputerr.Errorf("plan %q has no version %q (versions: %s)", p.Name, v, strings.Join(p.Versions, ", "))
	}
	return v, nil
}

// Validate checks the plan as data and renders its templates with sample
// values, so a plan that cannot work is refused when it is published,
// not when a user creates a service from it.
func (p *Plan) Validate() error {
	if err := p.validateFields(); err != nil {
		return inputerr.Errorf("invalid plan %q: %v", p.Name, err)
	}
	if _, err := p.Render(sampleParams(p)); err != nil {
		return inputerr.Errorf("invalid plan %q: %v", p.Name, err)
	}
	if _, err := p.RenderBinding(BindingData{Name: "sample", Host: "10.0.0.1", Port: p.Port, Credentials: sampleCredentials(p)}); err != nil {
		return inputerr.Errorf("invalid plan %q: %v", p.Name, err)
	}
	return nil
}

func (p *Plan) validateFields() error {
	if err := validName("plan", p.Name); err != nil {
		return err
	}
	switch {
	case len(validation.IsDNS1123Label(p.Type)) > 0:
		return fmt.Errorf("type %q: want a lower-case word such as postgresql", p.Type)
	case !prefixRE.MatchString(p.EnvPrefix):
		return fmt.Errorf("envPrefix %q: want upper-case letters, digits and '_', such as DATABASE", p.EnvPrefix)
	case len(p.Versions) == 0:
		return fmt.Errorf("versions: name at least one")
	case p.DefaultVersion != "" && !slices.Contains(p.Versions, p.DefaultVersion):
		return fmt.Errorf("defaultVersion %q is not one of versions", p.DefaultVersion)
	case p.Port <= 0 || p.Port > 65535:
		return fmt.Errorf("port %d: want 1-65535", p.Port)
	case strings.TrimSpace(p.Objects) == "":
		return fmt.Errorf("objects: give the objects to make")
	case p.Binding["uri"] == "" || p.Binding["host"] == "":
		return fmt.Errorf("binding: give at least host and uri")
	case (len(p.Connect) > 0 || len(p.Dump) > 0 || len(p.Restore) > 0) && p.Container == "":
		return fmt.Errorf("container: name the container connect, dump and restore run in")
	}
	return p.validateMore()
}

// validateMore is validateFields' second half: rotation, size, versions
// and keys.
func (p *Plan) validateMore() error {
	if r := p.Rotate; r != nil && (len(r.Usernames) != 2 || len(r.Grant) == 0 || len(r.Revoke) == 0 || p.Container == "") {
		return fmt.Errorf("rotate: give two usernames, grant and revoke commands, and the container they run in")
	}
	if p.DefaultSize != "" {
		if _, err := resource.ParseQuantity(p.DefaultSize); err != nil {
			return fmt.Errorf("defaultSize %q: want a quantity such as 1Gi", p.DefaultSize)
		}
	}
	for _, v := range p.Versions {
		if v == "" || len(validation.IsDNS1123Subdomain(strings.ToLower(v))) > 0 {
			return fmt.Errorf("version %q: want a word such as 15 or 7.2", v)
		}
	}
	return p.validateKeys()
}

func (p *Plan) validateKeys() error {
	for k := range p.Binding {
		if !keyRE.MatchString(k) || k == "type" || k == "provider" {
			return fmt.Errorf("binding key %q: want a lower-case word (type and provider come from the plan)", k)
		}
	}
	keys := slices.Concat(p.Credentials.Generate, slices.Collect(mapKeys(p.Credentials.Values)))
	for _, k := range keys {
		if !keyRE.MatchString(k) {
			return fmt.Errorf("credentials key %q: want a lower-case word", k)
		}
	}
	if p.Credentials.Secret != "" && len(keys) > 0 {
		return fmt.Errorf("credentials: either secret (another controller's) or generate/values (tug's), not both")
	}
	return nil
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func sampleParams(p *Plan) Params {
	return Params{Name: "sample", Namespace: "default", Object: ObjectName("sample"), Version: p.Versions[0],
		Image: "example.com/image:1", Size: "1Gi", Port: p.Port, CredentialsSecret: CredentialsSecretName("sample")}
}

func sampleCredentials(p *Plan) map[string]string {
	c := map[string]string{}
	for k, v := range p.Credentials.Values {
		c[k] = v
	}
	for _, k := range p.Credentials.Generate {
		c[k] = "sample"
	}
	return c
}
