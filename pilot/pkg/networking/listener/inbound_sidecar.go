package listener

import (
	"sort"
	"strconv"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// bindAddress is the address a target's chains are named after (and its
// own listener binds to): the Sidecar ingress bind, else the proxy's first
// wildcard (:: for an IPv6-only proxy).
func (t InboundTarget) bindAddress(o Options) string {
	if t.Bind != "" {
		return t.Bind
	}
	return o.wildcards()[0]
}

// BuildInboundListeners are the proxy's inbound listeners: virtualInbound
// with the chains of every target that rides on traffic redirection
// (unless the proxy does not redirect at all, Options.NoRedirect), then one
// listener of its own per target that binds to its port (a Sidecar
// ingress listener with captureMode NONE, or any of a NONE-mode proxy),
// named <bind>_<port> as Istio names them.
func BuildInboundListeners(o Options) []*listenerv3.Listener {
	o = o.direction(o.TelemetryIn)
	var redirected, bound []InboundTarget
	for _, t := range o.Inbound {
		if t.BindToPort {
			bound = append(bound, t)
		} else {
			redirected = append(redirected, t)
		}
	}
	var out []*listenerv3.Listener
	if !o.NoRedirect {
		vo := o
		vo.Inbound = redirected
		out = append(out, virtualInbound(vo))
	}
	sort.SliceStable(bound, func(i, j int) bool { return bound[i].Port < bound[j].Port })
	for _, t := range bound {
		out = append(out, boundInbound(t, o))
	}
	o.withTCPStats(out...)
	return out
}

// boundInbound is the listener of one inbound port that binds to it: the
// port's chains alone (no passthrough, no loop guard, no original
// destination filter), with the inspectors those chains need, on its bind
// and, under ISTIO_DUAL_STACK, its other binds.
func boundInbound(t InboundTarget, o Options) *listenerv3.Listener {
	chains := o.targetChains(t)
	l := &listenerv3.Listener{
		Name:                                 t.bindAddress(o) + "_" + strconv.Itoa(t.Port),
		Address:                              address(t.bindAddress(o), t.Port),
		TrafficDirection:                     core.TrafficDirection_INBOUND,
		FilterChains:                         chains,
		ListenerFilters:                      chainInspectors(chains),
		AccessLog:                            o.noRouteLogs(),
		MaxConnectionsToAcceptPerSocketEvent: wrapperspb.UInt32(1),
	}
	if o.DualStack {
		// Istio's buildInboundListener adds the other binds only under
		// ISTIO_DUAL_STACK
		l.AdditionalAddresses = additionalAddresses(t.ExtraBinds, t.Port)
	}
	o.inboundSniffing(l)
	return l
}

// chainInspectors are the listener filters the chains of a bound listener
// match on, Istio's way: the TLS inspector when a chain matches the "tls"
// transport and the HTTP inspector when one matches an HTTP application
// protocol, each turned off for the destination ports whose chains never
// need it.
func chainInspectors(chains []*listenerv3.FilterChain) []*listenerv3.ListenerFilter {
	type need struct{ tls, http bool }
	byPort := map[int]need{}
	for _, fc := range chains {
		m := fc.GetFilterChainMatch()
		port := int(m.GetDestinationPort().GetValue())
		n := byPort[port]
		n.tls = n.tls || m.GetTransportProtocol() == authn.TransportTLS
		for _, ap := range m.GetApplicationProtocols() {
			if ap == "http/1.1" || ap == "h2c" {
				n.http = true
			}
		}
		byPort[port] = n
	}
	var anyTLS, anyHTTP bool
	for _, n := range byPort {
		anyTLS, anyHTTP = anyTLS || n.tls, anyHTTP || n.http
	}
	var out []*listenerv3.ListenerFilter
	if anyTLS {
		f := tlsInspector()
		if !byPort[0].tls {
			// off by default: on only for the ports that need it
			var on []int
			for p, n := range byPort {
				if p != 0 && n.tls {
					on = append(on, p)
				}
			}
			if len(on) > 0 {
				sort.Ints(on)
				f.FilterDisabled = &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_NotMatch{
					NotMatch: portsPredicate(on)}}
			}
		} else {
			var off []int
			for p, n := range byPort {
				if p != 0 && !n.tls {
					off = append(off, p)
				}
			}
			if len(off) > 0 {
				sort.Ints(off)
				f.FilterDisabled = portsPredicate(off)
			}
		}
		out = append(out, f)
	}
	if anyHTTP {
		f := httpInspector()
		var off []int
		for p, n := range byPort {
			if !n.http {
				off = append(off, p)
			}
		}
		if len(off) > 0 {
			sort.Ints(off)
			f.FilterDisabled = portsPredicate(off)
		}
		out = append(out, f)
	}
	return out
}

// portsPredicate matches connections to any of the ports.
func portsPredicate(ports []int) *listenerv3.ListenerFilterChainMatchPredicate {
	rng := func(p int) *listenerv3.ListenerFilterChainMatchPredicate {
		return &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_DestinationPortRange{
			DestinationPortRange: &typev3.Int32Range{Start: int32(p), End: int32(p + 1)}}}
	}
	if len(ports) == 1 {
		return rng(ports[0])
	}
	or := &listenerv3.ListenerFilterChainMatchPredicate_MatchSet{}
	for _, p := range ports {
		or.Rules = append(or.Rules, rng(p))
	}
	return &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_OrMatch{OrMatch: or}}
}

// customTLSChains is the one chain of a port whose Sidecar ingress listener
// terminates TLS itself: it matches TLS to the port and serves the
// Sidecar's certificates; the port's protocol is already the one after TLS
// termination (HTTPS is HTTP, TLS is TCP; Mongo, Redis and MySQL keep
// their filters, as in Istio).
func (o Options) customTLSChains(name string, p InboundTarget, clusterName, operation string) []*listenerv3.FilterChain {
	filters := []*listenerv3.Filter{metadataExchange()}
	switch authn.ListenerProtocolOf(p.Protocol) {
	case authn.ListenerHTTP:
		filters = append(filters, inboundHTTP("inbound_"+name+";", clusterName, clusterName, p.virtualHostName(), operation, p.Protocol, o)())
	case authn.ListenerTCP:
		filters = append(append(filters, o.InboundTCPPolicy...), o.inboundTCPStack(p.Protocol, clusterName)...)
	default:
		return nil
	}
	return []*listenerv3.FilterChain{{
		Name:             name,
		FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(uint32(p.Port)), TransportProtocol: authn.TransportTLS},
		Filters:          filters,
		TransportSocket: &core.TransportSocket{Name: "envoy.transport_sockets.tls",
			ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: protoconv.MessageToAny(p.TLS)}},
	}}
}

// configMetadata names the Istio object a chain comes from, as Istio
// records it: {"istio": {"config": "/apis/<group>/<version>/namespaces/<ns>/<kind>/<name>"}}.
func configMetadata(path string) *core.Metadata {
	return &core.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: map[string]*structpb.Value{
		"config": structpb.NewStringValue(path)}}}}
}

// SidecarIngressTLS is the downstream TLS context of a Sidecar ingress
// listener's tls block, rendered as Istio renders it for sidecars: the
// files it names (through the agent's SDS), or its credentialName from
// istiod, ALPN h2 and http/1.1 whatever the port's protocol, client
// certificates required under MUTUAL, unknown and repeated cipher suites
// dropped as for gateways; nil for modes a sidecar cannot terminate
// (PASSTHROUGH, AUTO_PASSTHROUGH).
func SidecarIngressTLS(t *networking.ServerTLSSettings, in GatewayTLS) *tlsv3.DownstreamTlsContext {
	if t == nil {
		return nil
	}
	// a Server of protocol HTTPS gets the same context as the sidecar:
	// ALPN h2, http/1.1 whatever the mode
	s := &networking.Server{Port: &networking.Port{Protocol: string(protocol.HTTPS)}, Tls: t}
	return GatewayOptions{TLSInputs: in}.serverTLS(s)
}

// AfterTLSTermination is the protocol a port carries once its TLS is
// terminated: HTTPS is HTTP, TLS is TCP, anything else is unchanged.
func AfterTLSTermination(p protocol.Instance) protocol.Instance {
	switch p {
	case protocol.HTTPS:
		return protocol.HTTP
	case protocol.TLS:
		return protocol.TCP
	}
	return p
}
