package listener

import (
	"sort"
	"strconv"
	"sync"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	origsrc "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_src/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// virtualInbound accepts redirected inbound traffic. Each connection is
// matched by destination port, then by transport: mTLS from a mesh peer
// (terminated here with the workload's certificate), plain text, or TLS the
// client speaks end to end (passed through). Ports of the proxy's services
// get chains of their declared protocol; other ports go to the inbound
// passthrough cluster, through an HTTP connection manager when the HTTP
// inspector sees HTTP.
func virtualInbound(o Options) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name:                VirtualInbound,
		Address:             address(o.wildcards()[0], InboundPort),
		AdditionalAddresses: o.virtualAddresses(InboundPort, false),
		Transparent:         o.transparent(),
		TrafficDirection:    core.TrafficDirection_INBOUND,
		ListenerFilters: []*listenerv3.ListenerFilter{
			{Name: "envoy.filters.listener.original_dst", ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: originalDstConfig()}},
		},
		AccessLog:                            o.noRouteLogs(),
		MaxConnectionsToAcceptPerSocketEvent: wrapperspb.UInt32(1),
	}
	if o.Transparent {
		// under TPROXY the application sees the client's own address:
		// the connection to it is made from that address, marked so the
		// proxy's routing rules send the reply back through it
		l.ListenerFilters = append(l.ListenerFilters, originalSrc())
	}
	o.inboundSniffing(l)
	l.FilterChains = append(l.FilterChains, loopGuard(VirtualInbound, InboundPort, metadataExchange()))
	passthrough := cluster.InboundPassthrough
	ports := append([]InboundTarget(nil), o.Inbound...)
	sort.Slice(ports, func(i, j int) bool { return ports[i].Port < ports[j].Port })
	targets := make([]uint32, 0, len(ports))
	for _, p := range ports {
		targets = append(targets, uint32(p.Port))
	}
	// the passthrough in the workload's mode, then ports whose port-level
	// mode differs and that have no chains of their own
	for _, pc := range o.MTLS.Passthrough(targets, authn.ChainOptions{}) {
		var port *wrapperspb.UInt32Value
		if pc.Port != 0 {
			port = wrapperspb.UInt32(pc.Port)
		}
		l.FilterChains = append(l.FilterChains, o.inboundChains(VirtualInbound, port, protocol.Unsupported, pc.Mode,
			inboundHTTP(passthrough+";", passthrough, passthrough, "inbound|http|0", ":0/*", protocol.Unsupported, o),
			func() []*listenerv3.Filter { return []*listenerv3.Filter{tcpProxy(passthrough, o, true)} })...)
	}
	for _, p := range ports {
		l.FilterChains = append(l.FilterChains, o.targetChains(p)...)
	}
	// the inspectors follow from the chains, as Istio derives them: a
	// port whose chains never match TLS (DISABLE) or an HTTP application
	// protocol does not wait for them
	l.ListenerFilters = append(l.ListenerFilters, chainInspectors(l.FilterChains)...)
	return l
}

// targetChains are the chains of one of the proxy's ports, named after
// its bind address and port as Istio names them ("10.1.0.9_9080" for a
// Sidecar ingress listener, "0.0.0.0_9080" for a service's port); chains of
// a Sidecar ingress listener carry the Sidecar in their metadata.
func (o Options) targetChains(p InboundTarget) []*listenerv3.FilterChain {
	name := p.bindAddress(o) + "_" + strconv.Itoa(p.Port)
	c := cluster.SubsetKey(cluster.Inbound, "", "", p.Port)
	op := ""
	switch {
	case p.TraceHost != "":
		op = p.TraceHost + ":" + strconv.Itoa(p.Port) + "/*"
	case len(p.Services) > 0:
		op = p.Services[0].Hostname + ":" + strconv.Itoa(p.ServicePort) + "/*"
	}
	chains := o.inboundChains(name, wrapperspb.UInt32(uint32(p.Port)), p.Protocol, o.MTLS.Mode(uint32(p.Port)),
		inboundHTTP("inbound_"+name+";", c, c, p.virtualHostName(), op, p.Protocol, o),
		func() []*listenerv3.Filter { return o.inboundTCPStack(p.Protocol, c) })
	if p.TLS != nil && o.MTLS.Mode(uint32(p.Port)) == authn.ModeDisable {
		// the Sidecar's own TLS replaces the plain text chains, and only
		// where the port's PeerAuthentication mode is DISABLE (Istio's rule:
		// the mesh's mTLS and the user's TLS never share a port)
		chains = o.customTLSChains(name, p, c, op)
	}
	if p.Config != "" {
		for _, fc := range chains {
			fc.Metadata = configMetadata(p.Config)
		}
	}
	return chains
}

// inboundChains are the chains of one destination (a port, or every other
// port when port is nil) for a protocol under a PeerAuthentication mode, in
// the shapes and order authn.Chains gives (Istio's). Every chain starts with
// the metadata exchange; HTTP chains of the passthrough are the catch-all;
// TCP chains end with tcpFilters, after the TCP policy.
func (o Options) inboundChains(name string, port *wrapperspb.UInt32Value, proto protocol.Instance, mode authn.Mode,
	httpFilter func() *listenerv3.Filter, tcpFilters func() []*listenerv3.Filter) []*listenerv3.FilterChain {
	lp := authn.ListenerProtocolOf(proto)
	if port == nil {
		lp = authn.ListenerAuto
	}
	tlsSockets := o.inboundTLS()
	var out []*listenerv3.FilterChain
	for _, c := range authn.Chains(mode, lp, authn.ChainOptions{}) {
		n := name
		filters := []*listenerv3.Filter{metadataExchange()}
		if c.Protocol == authn.ListenerHTTP {
			filters = append(filters, httpFilter())
			if port == nil {
				n = name + "-catchall-http"
			}
		} else {
			filters = append(append(filters, o.InboundTCPPolicy...), tcpFilters()...)
		}
		out = append(out, &listenerv3.FilterChain{
			Name:             n,
			FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: port, TransportProtocol: c.TransportProtocol, ApplicationProtocols: c.ApplicationProtocols},
			Filters:          filters,
			TransportSocket:  tlsSockets.For(c),
		})
	}
	return out
}

// inboundTCPStack ends the TCP chains of one of the proxy's ports, as
// Istio's buildInboundNetworkFilters does: the TCP proxy to the port's
// inbound cluster, behind (or, for Redis, replaced by) the filter of the
// port's protocol under the same switches as outbound chains, which takes
// the cluster's name as stat prefix and, for Redis, as catch-all route.
func (o Options) inboundTCPStack(p protocol.Instance, clusterName string) []*listenerv3.Filter {
	return o.TCP.Protocols.stack(p, tcpProxy(clusterName, o, true), clusterName, clusterName)
}

// inboundHTTP is the connection manager of an inbound HTTP chain: one route
// to the inbound cluster, with Istio's inbound settings (client certificate
// details forwarded, no timeout, retry only before the request is sent).
func inboundHTTP(statPrefix, routeName, clusterName, vhost, operation string, proto protocol.Instance, o Options) func() *listenerv3.Filter {
	return func() *listenerv3.Filter {
		m := connectionManager(statPrefix, telemetry.Inbound, o)
		if proto.IsHTTP2() && m.Http2ProtocolOptions == nil {
			// connectionSettings may have set HTTP/2 options already
			m.Http2ProtocolOptions = &core.Http2ProtocolOptions{}
		}
		// a gRPC call is not retried (Istio leaves the retry out)
		var retry *routev3.RetryPolicy
		if !proto.IsGRPC() {
			retry = &routev3.RetryPolicy{RetryOn: "reset-before-request", NumRetries: wrapperspb.UInt32(2)}
		}
		m.ServerName = "istio-envoy"
		m.ForwardClientCertDetails = hcm.HttpConnectionManager_APPEND_FORWARD
		m.SetCurrentClientCertDetails = &hcm.HttpConnectionManager_SetCurrentClientCertDetails{Subject: wrapperspb.Bool(true), Dns: true, Uri: true}
		m.RouteSpecifier = &hcm.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: routeName,
			VirtualHosts: []*routev3.VirtualHost{{Name: vhost, Domains: []string{"*"}, Routes: []*routev3.Route{{
				Name:  "default",
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier:  &routev3.RouteAction_Cluster{Cluster: clusterName},
					Timeout:           durationpb.New(0),
					RetryPolicy:       retry,
					MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(0), GrpcTimeoutHeaderMax: durationpb.New(0)},
				}},
				Decorator: &routev3.Decorator{Operation: operation},
			}}}},
			ValidateClusters: wrapperspb.Bool(false),
		}}
		return hcmFilter(m)
	}
}

// inboundTLS are the sockets of chains that terminate Istio mTLS: the
// caller's, else built from the trust domain and memoised (shared, never
// modified).
func (o Options) inboundTLS() authn.InboundTLS {
	if o.TLS != nil {
		return *o.TLS
	}
	td := o.TrustDomain
	if td == "" {
		td = "cluster.local"
	}
	if t, ok := inboundTLSByDomain.Load(td); ok {
		return t.(authn.InboundTLS)
	}
	t := authn.NewInboundTLS(authn.TLSOptions{TrustDomains: []string{td}, MinProtocolVersion: tlsv3.TlsParameters_TLSv1_2})
	inboundTLSByDomain.Store(td, t)
	return t
}

// inboundTLSByDomain memoises inboundTLS by trust domain.
var inboundTLSByDomain sync.Map // string -> authn.InboundTLS

// originalSrcConfig marks connections with 1337, the mark Istio's TPROXY
// rules route back through the proxy (shared: never modified).
var originalSrcConfig = protoconv.Constant(func() proto.Message { return &origsrc.OriginalSrc{Mark: 1337} })

// originalSrc makes the connection to the application come from the
// client's address (TPROXY).
func originalSrc() *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{Name: "envoy.filters.listener.original_src",
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: originalSrcConfig()}}
}

// virtualHostName names the inbound route's virtual host after the
// service port ("inbound|http|<port>"), as Istio's
// buildSidecarInboundHTTPRouteConfig does (cc.port.Port), not after the
// target port its cluster carries; a Sidecar ingress listener's port is
// its own.
func (p InboundTarget) virtualHostName() string {
	port := p.ServicePort
	if port == 0 || p.Config != "" {
		port = p.Port
	}
	return "inbound|http|" + strconv.Itoa(port)
}
