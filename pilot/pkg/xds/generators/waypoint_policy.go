package generators

import (
	typeapi "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// waypointClassName is the GatewayClass of Istio's waypoints: policies of
// the root namespace that target it apply to every waypoint.
const waypointClassName = "istio-waypoint"

// waypointPolicies are the policies of kind k (AuthorizationPolicy,
// RequestAuthentication) that apply to a waypoint's chains for svc (nil:
// the direct chains), as Istio attaches them to waypoints: only through targetRefs (a waypoint never takes a
// selector or namespace-wide policy, ztunnel enforces those), to svc's
// Service or ServiceEntry from its namespace, to the waypoint's Gateway
// from its namespace, or to the istio-waypoint GatewayClass from the root
// namespace. Root namespace first, then the waypoint's, then svc's; oldest
// first in each (the push context's order).
func waypointPolicies(push *model.PushContext, k kind.Kind, proxy *model.Proxy, svc *model.Service) []config.Config {
	namespaces := []string{push.RootNamespace()}
	add := func(ns string) {
		for _, n := range namespaces {
			if n == ns {
				return
			}
		}
		namespaces = append(namespaces, ns)
	}
	add(proxy.ConfigNamespace)
	if svc != nil {
		add(svc.Attributes.Namespace)
	}
	var out []config.Config
	for _, ns := range namespaces {
		for _, cfg := range push.PoliciesInNamespace(k, ns) {
			if attachesToWaypoint(cfg, push.RootNamespace(), proxy, svc) {
				out = append(out, cfg)
			}
		}
	}
	return out
}

func attachesToWaypoint(cfg config.Config, root string, proxy *model.Proxy, svc *model.Service) bool {
	_, gateway := waypointKey(proxy)
	for _, ref := range policyTargetRefs(cfg.Spec) {
		group, k, name := ref.GetGroup(), ref.GetKind(), ref.GetName()
		switch {
		case svc != nil && k == "Service" && (group == "" || group == "core") &&
			svc.Attributes.ServiceRegistry == model.Kubernetes && name == svc.Attributes.Name && cfg.Namespace == svc.Attributes.Namespace:
			return true
		case svc != nil && k == "ServiceEntry" && group == "networking.istio.io" &&
			svc.Attributes.ServiceRegistry == model.External && name == serviceObjectName(svc) && cfg.Namespace == svc.Attributes.Namespace:
			return true
		case k == "GatewayClass" && group == "gateway.networking.k8s.io" && name == waypointClassName && cfg.Namespace == root:
			return true
		case k == "Gateway" && group == "gateway.networking.k8s.io" && gateway != "" && name == gateway &&
			cfg.Namespace == proxy.ConfigNamespace && (ref.GetNamespace() == "" || ref.GetNamespace() == proxy.ConfigNamespace):
			return true
		}
	}
	return false
}

func serviceObjectName(svc *model.Service) string {
	if svc.Attributes.ObjectName != "" {
		return svc.Attributes.ObjectName
	}
	return svc.Attributes.Name
}

// policyTargetRefs are a policy's targetRefs, else its targetRef.
func policyTargetRefs(spec any) []*typeapi.PolicyTargetReference {
	if s, ok := spec.(interface {
		GetTargetRefs() []*typeapi.PolicyTargetReference
	}); ok && len(s.GetTargetRefs()) > 0 {
		return s.GetTargetRefs()
	}
	if s, ok := spec.(interface {
		GetTargetRef() *typeapi.PolicyTargetReference
	}); ok && s.GetTargetRef() != nil {
		return []*typeapi.PolicyTargetReference{s.GetTargetRef()}
	}
	return nil
}
