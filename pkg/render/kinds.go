package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is one object of an app as rendered: a typed object or an
// unstructured one, with TypeMeta set. (An alias of the same interface
// as pkg/owned's, so rendering needs nothing of what applies it.)
type Object = interface {
	runtime.Object
	metav1.Object
}

// List is the objects as one list, for the loops of pkg/owned (which sort
// it by the table of kinds, pkg/deploy.Kinds): adding a kind to what an
// app renders is a field of Objects, its rendering, and a line here.
func (objs Objects) List() []Object {
	var out []Object
	for _, d := range objs.Deployments {
		out = append(out, d)
	}
	if objs.Maintenance != nil {
		out = append(out, objs.Maintenance)
	}
	if objs.Service != nil {
		out = append(out, objs.Service)
	}
	for _, s := range objs.TrackServices {
		out = append(out, s)
	}
	for _, h := range objs.Autoscalers {
		out = append(out, h)
	}
	for _, c := range objs.Certificates {
		out = append(out, c)
	}
	if objs.Middleware != nil {
		out = append(out, objs.Middleware)
	}
	for _, i := range objs.Ingresses {
		out = append(out, i)
	}
	if objs.NetworkPolicy != nil {
		out = append(out, objs.NetworkPolicy)
	}
	for _, c := range objs.CronJobs {
		out = append(out, c)
	}
	for _, r := range objs.Routes {
		out = append(out, r)
	}
	return out
}
