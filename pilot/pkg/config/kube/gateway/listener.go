package gateway

import (
	"fmt"
	"sort"
	"strings"

	istio "istio.io/api/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// buildListener translates one listener into a server and records the
// listener's status. It returns a nil server for a TLS or HTTPS listener
// without a tls section, and whether the listener is programmed.
func (g *gatewayState) buildListener(index int, l gatewayv1.Listener) (*istio.Server, bool) {
	conds := map[string]*condition{
		string(gatewayv1.ListenerConditionAccepted):   {reason: string(gatewayv1.ListenerReasonAccepted), message: "No errors found"},
		string(gatewayv1.ListenerConditionProgrammed): {reason: string(gatewayv1.ListenerReasonProgrammed), message: "No errors found"},
		string(gatewayv1.ListenerConditionConflicted): {reason: string(gatewayv1.ListenerReasonNoConflicts), message: "No errors found",
			status: metav1.ConditionFalse},
		string(gatewayv1.ListenerConditionResolvedRefs): {reason: string(gatewayv1.ListenerReasonResolvedRefs), message: "No errors found"},
	}
	ok := true
	tls, err := g.buildTLS(l)
	if err != nil {
		conds[string(gatewayv1.ListenerConditionResolvedRefs)].err = err
		conds[string(gatewayv1.ListenerConditionProgrammed)].err = &ConfigError{Reason: string(gatewayv1.ListenerReasonInvalid),
			Message: "Bad TLS configuration"}
		switch err.Reason {
		case string(gatewayv1.ListenerReasonInvalidCACertificateRef), string(gatewayv1.ListenerReasonInvalidCACertificateKind),
			string(gatewayv1.ListenerReasonRefNotPermitted):
			conds[string(gatewayv1.ListenerConditionAccepted)].err = &ConfigError{
				Reason: string(gatewayv1.ListenerReasonNoValidCACertificate), Message: err.Message}
		}
		ok = false
	}
	hosts := hostnameMatch(g.ctx, g.cfg.Namespace, l)
	protocol, perr := listenerProtocol(l.Protocol, g.info.waypoint)
	if perr != nil {
		conds[string(gatewayv1.ListenerConditionAccepted)].err = &ConfigError{Reason: string(gatewayv1.ListenerReasonUnsupportedProtocol),
			Message: perr.Error()}
		ok = false
	}
	if g.info.waypoint && (l.Port != waypointPort || l.Protocol != protocolHBONE) {
		// as in Istio, reported but still counted as valid
		conds[string(gatewayv1.ListenerConditionAccepted)].err = &ConfigError{Reason: string(gatewayv1.ListenerReasonUnsupportedProtocol),
			Message: `Expected a single listener on port 15008 with protocol "HBONE"`}
	}
	server := &istio.Server{
		// one server per synthetic Gateway, so they can all share a name
		Port:  &istio.Port{Name: "default", Number: uint32(l.Port), Protocol: protocol},
		Hosts: hosts,
		Tls:   tls,
	}
	if tls == nil && (l.Protocol == gatewayv1.HTTPSProtocolType || l.Protocol == gatewayv1.TLSProtocolType) {
		server = nil
	}
	g.status.Listeners = reportListener(index, l, g.cfg.Generation, g.status.Listeners, conds)
	return server, ok
}

// reportListener writes the status of listener index.
func reportListener(index int, l gatewayv1.Listener, generation int64, statuses []gatewayv1.ListenerStatus,
	conds map[string]*condition,
) []gatewayv1.ListenerStatus {
	for index >= len(statuses) {
		statuses = append(statuses, gatewayv1.ListenerStatus{})
	}
	existing := statuses[index].Conditions
	kinds, valid := supportedKinds(l)
	if !valid {
		conds[string(gatewayv1.ListenerConditionResolvedRefs)] = &condition{reason: string(gatewayv1.ListenerReasonInvalidRouteKinds),
			status: metav1.ConditionFalse, message: "Invalid route kinds"}
	}
	statuses[index] = gatewayv1.ListenerStatus{
		Name:           l.Name,
		SupportedKinds: kinds,
		Conditions:     setConditions(generation, existing, conds),
	}
	return statuses
}

// reportListenerConflict is the status of a listener that lost a conflict.
func reportListenerConflict(index int, l gatewayv1.Listener, generation int64, statuses []gatewayv1.ListenerStatus,
	reason gatewayv1.ListenerConditionReason,
) []gatewayv1.ListenerStatus {
	const msg = "Listener has a conflict with another listener attached to the same Gateway"
	conds := map[string]*condition{
		string(gatewayv1.ListenerConditionAccepted):   {err: &ConfigError{Reason: string(reason), Message: msg}},
		string(gatewayv1.ListenerConditionProgrammed): {err: &ConfigError{Reason: string(reason), Message: msg}},
		string(gatewayv1.ListenerConditionConflicted): {reason: string(reason), message: msg, status: metav1.ConditionTrue},
	}
	return reportListener(index, l, generation, statuses, conds)
}

func routeKind(k GroupKind) gatewayv1.RouteGroupKind {
	g := gatewayv1.Group(k.Group)
	return gatewayv1.RouteGroupKind{Group: &g, Kind: gatewayv1.Kind(k.Kind)}
}

// supportedKinds are the route kinds a listener admits: those of its
// protocol, narrowed to allowedRoutes.kinds; valid is false when
// allowedRoutes names a kind the protocol cannot carry.
func supportedKinds(l gatewayv1.Listener) ([]gatewayv1.RouteGroupKind, bool) {
	supported := []gatewayv1.RouteGroupKind{}
	switch l.Protocol {
	case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType:
		supported = []gatewayv1.RouteGroupKind{routeKind(kindHTTPRoute), routeKind(kindGRPCRoute)}
	case gatewayv1.TCPProtocolType:
		supported = []gatewayv1.RouteGroupKind{routeKind(kindTCPRoute)}
	case gatewayv1.TLSProtocolType:
		supported = []gatewayv1.RouteGroupKind{routeKind(kindTLSRoute)}
		if l.TLS != nil && orDefault(l.TLS.Mode, "") == gatewayv1.TLSModeTerminate {
			supported = append(supported, routeKind(kindTCPRoute))
		}
	}
	if l.AllowedRoutes == nil || len(l.AllowedRoutes.Kinds) == 0 {
		return supported, true
	}
	both := []gatewayv1.RouteGroupKind{}
	for _, s := range supported {
		for _, k := range l.AllowedRoutes.Kinds {
			if sameRouteKind(s, k) {
				both = append(both, s)
				break
			}
		}
	}
	return both, len(both) == len(l.AllowedRoutes.Kinds)
}

func sameRouteKind(a, b gatewayv1.RouteGroupKind) bool {
	return a.Kind == b.Kind && orDefault(a.Group, gatewayv1.GroupName) == orDefault(b.Group, gatewayv1.GroupName)
}

const (
	protocolHBONE gatewayv1.ProtocolType = "HBONE"
	waypointPort                         = 15008
)

var supportedProtocols = map[gatewayv1.ProtocolType]bool{
	gatewayv1.HTTPProtocolType: true, gatewayv1.HTTPSProtocolType: true,
	gatewayv1.TLSProtocolType: true, gatewayv1.TCPProtocolType: true, protocolHBONE: true,
}

// listenerProtocol maps a listener protocol to the Istio server protocol;
// HBONE is a waypoint's only.
func listenerProtocol(p gatewayv1.ProtocolType, waypoint bool) (string, error) {
	switch p {
	case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType, gatewayv1.TLSProtocolType, gatewayv1.TCPProtocolType:
		return string(p), nil
	case protocolHBONE:
		if waypoint {
			return string(p), nil
		}
		return "", fmt.Errorf("protocol %q is only supported for waypoint proxies", p)
	}
	if up := gatewayv1.ProtocolType(strings.ToUpper(string(p))); supportedProtocols[up] {
		return "", fmt.Errorf("protocol %q is unsupported. hint: %q (uppercase) may be supported", p, up)
	}
	return "", fmt.Errorf("protocol %q is unsupported", p)
}

// hostnameMatch is the server's hosts: namespace/hostname for every
// namespace allowedRoutes admits ("~" when none does).
func hostnameMatch(ctx Context, namespace string, l gatewayv1.Listener) []string {
	hostname := "*"
	if l.Hostname != nil {
		hostname = string(*l.Hostname)
	}
	var out []string
	for _, ns := range allowedNamespaces(ctx, namespace, l.AllowedRoutes) {
		if ns != "" {
			out = append(out, ns+"/"+hostname)
		}
	}
	if len(out) == 0 {
		// hosts may not be empty; "~" matches no namespace
		return []string{"~/" + hostname}
	}
	return out
}

// allowedNamespaces lists the namespaces whose routes a listener admits
// ("*" for all).
func allowedNamespaces(ctx Context, local string, ar *gatewayv1.AllowedRoutes) []string {
	if ar == nil || ar.Namespaces == nil || ar.Namespaces.From == nil || *ar.Namespaces.From == gatewayv1.NamespacesFromSame {
		return []string{local}
	}
	if *ar.Namespaces.From == gatewayv1.NamespacesFromAll || ar.Namespaces.Selector == nil {
		return []string{"*"}
	}
	sel, err := metav1.LabelSelectorAsSelector(ar.Namespaces.Selector)
	if err != nil {
		return nil
	}
	var out []string
	for _, ns := range ctx.Namespaces() {
		if sel.Matches(namespaceLabels(ns)) {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out
}

// namespaceLabels adds kubernetes.io/metadata.name, which older clusters
// do not set.
func namespaceLabels(ns NamespaceInfo) labels.Set {
	if ns.Labels[namespaceNameLabel] == ns.Name {
		return ns.Labels
	}
	out := make(labels.Set, len(ns.Labels)+1)
	for k, v := range ns.Labels {
		out[k] = v
	}
	out[namespaceNameLabel] = ns.Name
	return out
}

// listenerConflicts decides which listeners lose a conflict with an earlier
// listener of the Gateway (same port, and the same protocol family and
// hostname), and why.
func listenerConflicts(listeners []gatewayv1.Listener) map[string]gatewayv1.ListenerConditionReason {
	out := map[string]gatewayv1.ListenerConditionReason{}
	var accepted []gatewayv1.Listener
	for _, l := range listeners {
		conflict := false
		for _, prior := range accepted {
			if listenersDistinct(l, prior) {
				continue
			}
			reason := gatewayv1.ListenerReasonHostnameConflict
			if (isL4(l.Protocol) && isL4(prior.Protocol)) || l.Protocol != prior.Protocol {
				reason = gatewayv1.ListenerReasonProtocolConflict
			}
			out[string(l.Name)] = reason
			conflict = true
			break
		}
		if !conflict {
			accepted = append(accepted, l)
		}
	}
	return out
}

func isL4(p gatewayv1.ProtocolType) bool {
	return p == gatewayv1.TCPProtocolType || p == gatewayv1.UDPProtocolType
}

func isHTTPLike(p gatewayv1.ProtocolType) bool {
	return p == gatewayv1.HTTPProtocolType || p == gatewayv1.HTTPSProtocolType || p == gatewayv1.TLSProtocolType
}

func listenerHostname(l gatewayv1.Listener) string {
	if l.Hostname == nil || *l.Hostname == "" {
		return "*"
	}
	return string(*l.Hostname)
}

func listenersDistinct(a, b gatewayv1.Listener) bool {
	switch {
	case a.Port != b.Port:
		return true
	case isL4(a.Protocol) && isHTTPLike(b.Protocol), isHTTPLike(a.Protocol) && isL4(b.Protocol):
		return false
	case isL4(a.Protocol) && isL4(b.Protocol):
		return false
	case isHTTPLike(a.Protocol) && isHTTPLike(b.Protocol):
		return listenerHostname(a) != listenerHostname(b)
	}
	return a.Protocol != b.Protocol
}
