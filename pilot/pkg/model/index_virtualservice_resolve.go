package model

import (
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
)

// MeshGateway is the gateway name that binds a VirtualService to sidecars.
const MeshGateway = "mesh"

// routeSemanticsAnnotation marks VirtualServices translated from Gateway
// API routes; they take precedence in their own namespace.
const routeSemanticsAnnotation = "internal.istio.io/route-semantics"

// useGatewaySemantics reports whether a VirtualService follows Gateway API
// semantics.
func useGatewaySemantics(cfg *config.Config) bool {
	return cfg.Annotations[routeSemanticsAnnotation] == "gateway"
}

// resolveVirtualService returns a deep copy of cfg with every host name
// complete: top-level hosts and the hosts of route, mirror and TCP/TLS
// destinations become FQDNs (name.namespace.svc.<domain>), and gateway
// references become namespace/name. The store's object is not touched.
func resolveVirtualService(cfg *config.Config, domain string) config.Config {
	out := cfg.DeepCopy()
	vs, ok := out.Spec.(*networking.VirtualService)
	if !ok || vs == nil {
		return out
	}
	ns := cfg.Namespace
	host := func(h string) string { return resolveShortName(h, ns, domain) }
	dest := func(d *networking.Destination) {
		if d != nil {
			d.Host = host(d.Host)
		}
	}
	for i, h := range vs.Hosts {
		vs.Hosts[i] = host(h)
	}
	resolveGatewayList(vs.Gateways, ns)
	for _, r := range vs.Http {
		for _, m := range r.Match {
			resolveGatewayList(m.Gateways, ns)
		}
		for _, d := range r.Route {
			dest(d.Destination)
		}
		dest(r.Mirror)
		for _, m := range r.Mirrors {
			dest(m.Destination)
		}
	}
	for _, r := range vs.Tcp {
		for _, m := range r.Match {
			resolveGatewayList(m.Gateways, ns)
		}
		for _, d := range r.Route {
			dest(d.Destination)
		}
	}
	for _, r := range vs.Tls {
		for _, m := range r.Match {
			resolveGatewayList(m.Gateways, ns)
		}
		for _, d := range r.Route {
			dest(d.Destination)
		}
	}
	return out
}

func resolveGatewayList(gws []string, ns string) {
	for i, g := range gws {
		gws[i] = resolveGatewayName(g, ns)
	}
}

// resolveGatewayName turns a gateway reference of a VirtualService in
// namespace ns into namespace/name: "gw" and "./gw" are in ns, "ns2/gw" is
// kept, and the legacy "gw.ns2.svc.cluster.local" (or "gw.ns2") becomes
// "ns2/gw". "mesh" is kept.
func resolveGatewayName(g, ns string) string {
	if g == MeshGateway || g == "" {
		return g
	}
	if i := strings.Index(g, "/"); i >= 0 {
		if g[:i] == "." {
			return ns + "/" + g[i+1:]
		}
		return g
	}
	name, rest, hasDot := strings.Cut(g, ".")
	if !hasDot {
		return ns + "/" + g
	}
	gwNS, _, _ := strings.Cut(rest, ".")
	return gwNS + "/" + name
}

// gatewayNames returns the gateways a resolved VirtualService binds to:
// its gateways, or "mesh" when it names none.
func gatewayNames(vs *networking.VirtualService) []string {
	if len(vs.GetGateways()) == 0 {
		return []string{MeshGateway}
	}
	return vs.GetGateways()
}

// forEachDestination calls fn for every destination of a VirtualService:
// HTTP routes and mirrors, TCP and TLS routes.
func forEachDestination(vs *networking.VirtualService, fn func(*networking.Destination)) {
	for _, r := range vs.GetHttp() {
		for _, d := range r.Route {
			fn(d.Destination)
		}
		fn(r.Mirror)
		for _, m := range r.Mirrors {
			fn(m.Destination)
		}
	}
	for _, r := range vs.GetTcp() {
		for _, d := range r.Route {
			fn(d.Destination)
		}
	}
	for _, r := range vs.GetTls() {
		for _, d := range r.Route {
			fn(d.Destination)
		}
	}
}

// vsDestinationHosts returns the distinct destination hosts of a
// VirtualService in order of appearance.
func vsDestinationHosts(vs *networking.VirtualService) []string {
	var out []string // few hosts: a linear scan beats a set
	forEachDestination(vs, func(d *networking.Destination) {
		if d != nil && d.Host != "" && !slices.Contains(out, d.Host) {
			out = append(out, d.Host)
		}
	})
	return out
}
