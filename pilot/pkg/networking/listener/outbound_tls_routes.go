package listener

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
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
		c := a.defaultTCPChain(o)
		c.sni = a.fallbackSNI(o)
		return []*egressChain{c}
	}
	return out
}

// fallbackSNI are the server names of a TLS port's own chain (no tls route
// applies), as Istio's buildSidecarOutboundTLSFilterChainOpts picks them:
// the service's hostname, then each of its ExternalName aliases with the
// other names the proxy's DNS domain gives it, when the listener cannot
// tell the service by address (its chains match CIDRs, the service has no
// address, or the service's address and the listener's bind are both the
// proxy's first wildcard) and for a DYNAMIC_DNS wildcard ServiceEntry,
// which may share its listener's address with other hosts; nil otherwise.
func (a egressAdd) fallbackSNI(o Options) []string {
	listen := o.serviceAddresses(a.svc)[0]
	if strings.Contains(listen, "/") {
		listen = "" // a CIDR: a.cidr has it
	}
	if ws := o.wildcards(); a.svc.Attributes.ServiceRegistry == model.External && len(ws) == 1 && ws[0] == "::" && listen == model.UnspecifiedIP {
		// an IPv6-only proxy listens on :: for a ServiceEntry without
		// addresses (addEgress)
		listen = ws[0]
	}
	dynamic := strings.HasPrefix(a.svc.Hostname, "*") && a.svc.Resolution == model.DynamicDNS
	if len(a.cidr) == 0 && listen != "" && (listen != a.wild || a.bind != a.wild) && !dynamic {
		return nil
	}
	out := []string{a.svc.Hostname}
	for _, al := range a.svc.Attributes.Aliases {
		out = append(append(out, al.Hostname), altNames(al.Hostname, o.DNSDomain)...)
	}
	return out
}

// altNames are the other names a host goes by from a proxy in DNS domain
// domain ("<namespace>.svc.<suffix>"), without a port, as Istio's
// GenerateAltVirtualHosts gives them: the absolute name (trailing dot),
// then for a Kubernetes service name its short forms (the bare name only
// from its own namespace), for another host under a domain shared with the
// proxy's its part before that domain.
func altNames(host, domain string) []string {
	out := []string{host + "."}
	if before, after, ok := strings.Cut(domain, ".svc."); ok {
		i := strings.Index(host, ".svc.")
		if !strings.HasSuffix(host, ".svc."+after) || i <= 0 {
			return out
		}
		ns := strings.Index(host, ".")
		if ns+1 > i {
			return out // not <name>.<namespace>.svc...
		}
		if host[ns+1:i] == before {
			return append(out, host[:ns], host[:i]+".svc", host[:i])
		}
		return append(out, host[:i], host[:i]+".svc")
	}
	hp, dp := strings.Split(host, "."), strings.Split(domain, ".")
	shared := 0
	for shared < len(hp) && shared < len(dp) && hp[len(hp)-1-shared] == dp[len(dp)-1-shared] {
		shared++
	}
	if shared == 0 {
		return out
	}
	unique := hp[:len(hp)-shared]
	out = append(out, strings.Join(unique, "."))
	if len(unique) == 2 {
		out = append(out, strings.Join(unique, ".")+"."+hp[len(hp)-shared])
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
