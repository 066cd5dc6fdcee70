package gateway

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/host"
)

// Why a route is refused by a parent: the reasons of the Accepted condition.
const (
	reasonNoMatchingParent   = string(gatewayv1.RouteReasonNoMatchingParent)
	reasonNotAllowed         = string(gatewayv1.RouteReasonNotAllowedByListeners)
	reasonNoMatchingHostname = string(gatewayv1.RouteReasonNoMatchingListenerHostname)
)

// route is what every route kind has in common.
type route struct {
	kind       GroupKind
	cfg        config.Config
	parentRefs []gatewayv1.ParentReference
	hostnames  []gatewayv1.Hostname
	// current is the route's current status.
	current []gatewayv1.RouteParentStatus
}

// routeParent is one listener a parentRef of a route resolves to.
type routeParent struct {
	internalName string
	denied       *parentError
	ref          gatewayv1.ParentReference
	// hostname is the listener's hostname as written.
	hostname string
	// banned are the hostnames of the Gateway's other listeners of the same
	// port and protocol: a route host they match more exactly is theirs.
	banned  stringSet
	gateway types.NamespacedName
	section string
	// mesh parents (a Service or ServiceEntry) route the mesh's traffic to
	// meshHosts rather than a Gateway's.
	mesh      bool
	meshHosts []string
}

// meshName is the gateway name of mesh (sidecar) routing.
const meshName = "mesh"

// meshKinds are the route kinds mesh parents admit.
var meshKinds = []gatewayv1.RouteGroupKind{routeKind(kindHTTPRoute), routeKind(kindGRPCRoute), routeKind(kindTCPRoute),
	routeKind(kindTLSRoute)}

// routeParents resolves every parentRef of r: a Gateway to each of its
// listeners, a Service or ServiceEntry to the mesh; each with the reason it
// refuses the route, if any. parentRefs of other kinds are not ours.
func routeParents(ctx Context, opts Options, r route) []routeParent {
	var out []routeParent
	for _, ref := range r.parentRefs {
		ns := string(orDefault(ref.Namespace, gatewayv1.Namespace(r.cfg.Namespace)))
		switch normalizeKind(ref.Group, ref.Kind, kindGateway) {
		case kindService, kindServiceEntry:
			out = append(out, meshParent(ctx, opts, ref, ns))
			continue
		case kindGateway:
		default:
			continue
		}
		listeners := ctx.Listeners(ns, string(ref.Name))
		for i := range listeners {
			l := &listeners[i]
			banned := stringSet{}
			for j := range listeners {
				if j != i && listeners[j].Port == l.Port && listeners[j].Protocol == l.Protocol {
					banned.add(listeners[j].OriginalHostname)
				}
			}
			delete(banned, l.OriginalHostname)
			out = append(out, routeParent{
				internalName: l.InternalName,
				denied:       referenceAllowed(l, r.kind, ref, r.hostnames, r.cfg.Namespace),
				ref:          ref,
				hostname:     l.OriginalHostname,
				banned:       banned,
				gateway:      types.NamespacedName{Namespace: ns, Name: string(ref.Name)},
				section:      l.SectionName,
			})
		}
	}
	slices.SortStableFunc(out, func(a, b routeParent) int {
		return strings.Compare(parentRefString(a.ref, r.cfg.Namespace), parentRefString(b.ref, r.cfg.Namespace))
	})
	return out
}

// meshParent resolves a Service or ServiceEntry parentRef: the route
// applies to the mesh's traffic to its hosts.
func meshParent(ctx Context, opts Options, ref gatewayv1.ParentReference, ns string) routeParent {
	p := routeParent{internalName: meshName, ref: ref, mesh: true, banned: stringSet{}}
	if normalizeKind(ref.Group, ref.Kind, kindGateway) == kindServiceEntry {
		hosts, ok := ctx.ServiceEntryHosts(ns, string(ref.Name))
		if !ok {
			p.denied = &parentError{Reason: reasonNoMatchingParent, Message: fmt.Sprintf("parent service entry: %q not found", ref.Name)}
		}
		p.meshHosts = hosts
		return p
	}
	host := serviceHostname(string(ref.Name), ns, opts.DomainSuffix)
	if svc := ctx.Service(host, ns); svc == nil || svc.Kind != "Service" {
		p.denied = &parentError{Reason: reasonNoMatchingParent, Message: fmt.Sprintf("parent service: %q not found", ref.Name)}
	}
	p.meshHosts = []string{host}
	return p
}

// referenceAllowed says why listener p refuses a route of kind with these
// hostnames from namespace, nil when it admits it.
func referenceAllowed(p *ParentInfo, kind GroupKind, ref gatewayv1.ParentReference, hostnames []gatewayv1.Hostname,
	namespace string,
) *parentError {
	// the port and section name select listeners first
	if port := orDefault(ref.Port, 0); port != 0 && int(port) != p.Port {
		return &parentError{Reason: reasonNoMatchingParent, Message: fmt.Sprintf("port %v not found", port)}
	}
	if s := string(orDefault(ref.SectionName, "")); s != "" && s != p.SectionName {
		return &parentError{Reason: reasonNoMatchingParent, Message: fmt.Sprintf("sectionName %q not found", s)}
	}
	if err := hostnamesAllowed(p, hostnames, namespace); err != nil {
		return err
	}
	for _, ak := range p.AllowedKinds {
		if string(ak.Kind) == kind.Kind && string(orDefault(ak.Group, gatewayv1.GroupName)) == kind.Group {
			return nil
		}
	}
	return &parentError{Reason: reasonNotAllowed, Message: fmt.Sprintf("kind %v is not allowed", kind)}
}

// hostnamesAllowed checks that one route hostname matches the listener
// (wildcards either side) in a namespace it admits.
func hostnamesAllowed(p *ParentInfo, hostnames []gatewayv1.Hostname, namespace string) *parentError {
	if len(p.Hostnames) == 0 {
		return nil
	}
	if len(hostnames) == 0 {
		hostnames = []gatewayv1.Hostname{"*"}
	}
	hostMatched := false
	for _, rh := range hostnames {
		for _, nh := range p.Hostnames {
			pns, ph, found := strings.Cut(nh, "/")
			if !found {
				pns, ph = "*", nh
			}
			match := host.Matches(ph, string(rh))
			hostMatched = hostMatched || match
			if match && (pns == "*" || pns == namespace) {
				return nil
			}
		}
	}
	if hostMatched {
		return &parentError{Reason: reasonNotAllowed, Message: fmt.Sprintf(
			"hostnames matched parent hostname %q, but namespace %q is not allowed by the parent", p.OriginalHostname, namespace)}
	}
	return &parentError{Reason: reasonNoMatchingHostname, Message: fmt.Sprintf(
		"no hostnames matched parent hostname %q", p.OriginalHostname)}
}

// admitted are the parents that accepted the route, by internal name.
func admitted(parents []routeParent) []routeParent {
	out := make([]routeParent, 0, len(parents))
	for _, p := range parents {
		if p.denied == nil {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b routeParent) int { return strings.Compare(a.internalName, b.internalName) })
	return out
}

// allowedByIsolation reports whether a route host bound through this
// parent belongs to it: a wildcard listener does not take a host that
// another listener of the same port names more exactly.
func (p routeParent) allowedByIsolation(routeHost string) bool {
	if p.hostname != "" && !host.IsWildcard(p.hostname) {
		return true
	}
	if p.hostname != "" && !host.Matches(routeHost, p.hostname) {
		return false
	}
	for other := range p.banned {
		if len(p.hostname) > len(other) {
			continue
		}
		if host.SubsetOf(routeHost, other) {
			return false
		}
	}
	return true
}

// attachments are the listeners that accepted the route.
func attachments(parents []routeParent) []Attachment {
	var out []Attachment
	for _, p := range admitted(parents) {
		if p.mesh {
			continue
		}
		a := Attachment{Gateway: p.gateway, Listener: p.section}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// hostIntersection is the narrower of each overlapping pair of a and b.
func hostIntersection(a, b []string) []string {
	out := make([]string, 0, len(a))
	for _, x := range a {
		for _, y := range b {
			switch {
			case host.SubsetOf(x, y):
				if !slices.Contains(out, x) {
					out = append(out, x)
				}
			case host.SubsetOf(y, x):
				if !slices.Contains(out, y) {
					out = append(out, y)
				}
			}
		}
	}
	return out
}
