package listener

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// tlsChains are the chains of a TLS or HTTPS service port, in Istio's
// order: for each VirtualService bound to the host (first first), each tls
// route with destinations adds a chain per match that applies to the
// proxy, matching the match's sniHosts and the service's CIDRs or the
// match's destinationSubnets, and named after the VirtualService. A match
// whose sniHosts and destinationSubnets an earlier chain already matches
// adds nothing: for this proxy it can never be reached. Only when no match
// applies does the port keep its own chain to the service's cluster
// (matched by SNI on the wildcard, outbound_tcp_routes.go).
func (a egressAdd) tlsChains(o Options) []*egressChain {
	cidr := a.cidr
	handled := map[string]bool{}
	var out []*egressChain
	for _, vs := range hostVirtualServices(a.vss, a.svc.Hostname) {
		for _, tr := range vs.Spec.(*networking.VirtualService).GetTls() {
			if len(tr.GetRoute()) == 0 {
				continue // admission rejects it, but a store may still hold one
			}
			for _, m := range tr.GetMatch() {
				if !tlsMatchApplies(m, o.TCP, a.port) {
					continue
				}
				if len(m.GetDestinationSubnets()) > 0 && a.port > 0 {
					// Istio overwrites the CIDRs it started from, so the
					// subnets stay for the matches that follow too (a
					// Unix socket matches no address at all)
					cidr = m.GetDestinationSubnets()
				}
				key := runtimeTLSKey(m)
				if handled[key] {
					continue
				}
				handled[key] = true
				c := a.routeChain(vs, tr.GetRoute(), o, cidr, true)
				c.sni = m.GetSniHosts()
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return []*egressChain{a.defaultTCPChain(o)}
	}
	return out
}

// tlsMatchApplies checks the static predicates of a tls match (those a
// sidecar knows of every connection on the port); sniHosts and
// destinationSubnets are left to Envoy.
func tlsMatchApplies(m *networking.TLSMatchAttributes, t TCPRouting, port int) bool {
	if m == nil {
		return true
	}
	return t.staticMatch(m.GetGateways(), m.GetSourceLabels(), m.GetPort(), m.GetSourceNamespace(), port)
}

// runtimeTLSKey names what Envoy matches of a tls match: its sniHosts and
// destinationSubnets, in their order (Istio compares them as written).
func runtimeTLSKey(m *networking.TLSMatchAttributes) string {
	return strings.Join(m.GetSniHosts(), ",") + "|" + strings.Join(m.GetDestinationSubnets(), ",")
}
