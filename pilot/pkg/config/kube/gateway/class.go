package gateway

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// ConvertClass returns the class a GatewayClass object declares and the
// status it should carry, or nils when its controller is not one of ours.
func ConvertClass(opts Options, cfg config.Config) (*Class, *gatewayv1.GatewayClassStatus) {
	spec, ok := cfg.Spec.(*gatewayv1.GatewayClassSpec)
	if !ok || spec == nil {
		return nil, nil
	}
	controller := string(spec.ControllerName)
	if _, known := opts.classInfoOf(controller); !known {
		return nil, nil
	}
	status := &gatewayv1.GatewayClassStatus{}
	if cur, ok := cfg.Status.(*gatewayv1.GatewayClassStatus); ok && cur != nil {
		status = cur.DeepCopy()
	}
	status.Conditions = setConditions(cfg.Generation, status.Conditions, map[string]*condition{
		string(gatewayv1.GatewayClassConditionStatusAccepted): {
			reason:  string(gatewayv1.GatewayClassReasonAccepted),
			message: "Handled by Istio controller",
		},
	})
	return &Class{Name: cfg.Name, Controller: controller}, status
}

// ResolveClass returns the class of name: the declared one when a
// GatewayClass exists (nil when it is another controller's), else the
// builtin class of that name (with opts' mode), else nil.
func ResolveClass(opts Options, name string, declared *Class, exists bool) *Class {
	if exists {
		return declared
	}
	for _, b := range BuiltinsFor(opts.Ambient, !opts.NoRemoteClass) {
		if b.Name == name {
			c := b
			return &c
		}
	}
	return nil
}

// NewClassObject is the GatewayClass Istio creates for a builtin class.
func NewClassObject(c Class) config.Config {
	desc := ClassDescription(c.Controller)
	return config.Config{
		Meta: config.Meta{GroupVersionKind: gvk.GatewayClass, Name: c.Name},
		Spec: &gatewayv1.GatewayClassSpec{
			ControllerName: gatewayv1.GatewayController(c.Controller),
			Description:    &desc,
		},
	}
}
