package gateway

import (
	"fmt"
	"strings"

	istio "istio.io/api/networking/v1alpha3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Reasons of a route's ResolvedRefs condition, as Istio reports them.
const (
	reasonInvalidDestination = "InvalidDestination"
	reasonRefNotPermitted    = string(gatewayv1.RouteReasonRefNotPermitted)
	reasonInvalidKind        = string(gatewayv1.RouteReasonInvalidKind)
	reasonBackendNotFound    = string(gatewayv1.RouteReasonBackendNotFound)
	reasonInvalidFilter      = "InvalidFilter"
	reasonInvalidConfig      = "InvalidConfiguration"
)

// invalidBackend reports errors that drop one backend but keep the route.
func invalidBackend(e *ConfigError) bool {
	return e.Reason == reasonRefNotPermitted || e.Reason == reasonBackendNotFound || e.Reason == reasonInvalidKind
}

// routeCtx is what converting one route's rules needs.
type routeCtx struct {
	ctx  Context
	opts Options
	kind GroupKind
	ns   string
	// mesh rules do not need a ReferenceGrant to reach another namespace
	mesh bool
}

// destination resolves one backendRef. A nil destination with an error is
// a hard error (the rule fails); a destination with an error is a backend
// that is dropped at runtime (it is reported, the other backends serve).
func (rc routeCtx) destination(to gatewayv1.BackendObjectReference) (*istio.Destination, *ConfigError) {
	ref := normalizeKind(to.Group, to.Kind, kindService)
	if !rc.mesh && to.Namespace != nil && string(*to.Namespace) != rc.ns &&
		!rc.ctx.Allowed(rc.kind, rc.ns, ref, string(*to.Namespace), string(to.Name)) {
		return &istio.Destination{}, &ConfigError{Reason: reasonRefNotPermitted,
			Message: fmt.Sprintf("backendRef %v/%v not accessible to a %s in namespace %q (missing a ReferenceGrant?)",
				to.Name, *to.Namespace, rc.kind.Kind, rc.ns)}
	}
	ns := string(orDefault(to.Namespace, gatewayv1.Namespace(rc.ns)))
	var hostname string
	var missing *ConfigError
	switch ref {
	case kindService, kindServiceImp:
		if ref == kindService && strings.Contains(string(to.Name), ".") {
			return nil, &ConfigError{Reason: reasonInvalidDestination,
				Message: "service name invalid; the name of the Service must be used, not the hostname."}
		}
		// ServiceImport is served as the Service of the same name
		hostname = serviceHostname(string(to.Name), ns, rc.opts.DomainSuffix)
		if svc := rc.ctx.Service(hostname, ns); svc == nil || svc.Kind != "Service" {
			missing = &ConfigError{Reason: reasonBackendNotFound, Message: fmt.Sprintf("backend(%s) not found", hostname)}
		}
	case kindHostname:
		if to.Namespace != nil {
			return nil, &ConfigError{Reason: reasonInvalidDestination, Message: "namespace may not be set with Hostname type"}
		}
		hostname = string(to.Name)
		if rc.ctx.Service(hostname, ns) == nil {
			missing = &ConfigError{Reason: reasonBackendNotFound, Message: fmt.Sprintf("backend(%s) not found", hostname)}
		}
	default:
		return &istio.Destination{}, &ConfigError{Reason: reasonInvalidKind,
			Message: fmt.Sprintf("referencing unsupported backendRef: group %q kind %q", orDefault(to.Group, ""), orDefault(to.Kind, ""))}
	}
	if to.Port == nil {
		return nil, &ConfigError{Reason: reasonInvalidDestination, Message: "port is required in backendRef"}
	}
	return &istio.Destination{Host: hostname, Port: &istio.PortSelector{Number: uint32(*to.Port)}}, missing
}

// weighted drops zero-weight backends and returns the weights of the
// others; a single backend gets weight 0 (all traffic), as Istio writes it.
func weighted[B any](refs []B, weight func(B) *int32) ([]B, []int32) {
	var kept []B
	var weights []int32
	for _, b := range refs {
		w := orDefault(weight(b), 1)
		if w == 0 {
			continue
		}
		kept = append(kept, b)
		weights = append(weights, w)
	}
	if len(weights) == 1 {
		weights[0] = 0
	}
	return kept, weights
}

func weightSum[B any](refs []B, weight func(B) *int32) int32 {
	var sum int32
	for _, b := range refs {
		sum += orDefault(weight(b), 1)
	}
	return sum
}

// l4Destinations builds the destinations of a TCP or TLS rule.
func (rc routeCtx) l4Destinations(refs []gatewayv1.BackendRef) ([]*istio.RouteDestination, *ConfigError, *ConfigError) {
	if refs == nil {
		return nil, nil, nil
	}
	kept, weights := weighted(refs, func(b gatewayv1.BackendRef) *int32 { return b.Weight })
	var backendErr *ConfigError
	out := []*istio.RouteDestination{}
	for i, b := range kept {
		dst, err := rc.destination(b.BackendObjectReference)
		if err != nil {
			if !invalidBackend(err) {
				return nil, nil, err
			}
			backendErr = err
		}
		out = append(out, &istio.RouteDestination{Destination: dst, Weight: weights[i]})
	}
	return out, backendErr, nil
}

// zeroWeightDestination is where Istio sends L4 rules without a weighted
// backend: a cluster that does not exist, so connections are refused.
func zeroWeightDestination() []*istio.RouteDestination {
	return []*istio.RouteDestination{{Destination: &istio.Destination{Host: "internal.cluster.local", Subset: "zero-weight",
		Port: &istio.PortSelector{Number: 65535}}}}
}
