package listener

import (
	"sort"
	"strconv"
	"sync"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/protoconv"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// ALPN values an Istio client offers on mTLS connections.
var (
	mtlsTCPALPNs  = []string{telemetry.PeerExchangeALPN, "istio"}
	mtlsPortALPNs = append([]string{"istio", telemetry.PeerExchangeALPN}, telemetry.MTLSHTTPALPNs...)
	plainHTTPALPN = []string{"http/1.1", "h2c"}
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
		Name:             VirtualInbound,
		Address:          address(wildcard, InboundPort),
		TrafficDirection: core.TrafficDirection_INBOUND,
		ListenerFilters: []*listenerv3.ListenerFilter{
			{Name: "envoy.filters.listener.original_dst", ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: originalDstConfig()}},
			withDisabled(tlsInspector(), []int{InboundPort}),
			withDisabled(httpInspector(), append(o.knownProtocolPorts(), InboundPort)),
		},
		AccessLog:                            o.noRouteLogs(),
		MaxConnectionsToAcceptPerSocketEvent: wrapperspb.UInt32(1),
	}
	sniffing(l)
	l.FilterChains = append(l.FilterChains, loopGuard(VirtualInbound, InboundPort, metadataExchange()))
	passthrough := cluster.InboundPassthrough
	l.FilterChains = append(l.FilterChains, o.inboundChains(VirtualInbound, nil, protocol.Unsupported,
		inboundHTTP(passthrough+";", passthrough, passthrough, "inbound|http|0", ":0/*", o),
		func() *listenerv3.Filter { return tcpProxy(passthrough, o, true) })...)
	ports := append([]InboundTarget(nil), o.Inbound...)
	sort.Slice(ports, func(i, j int) bool { return ports[i].Port < ports[j].Port })
	for _, p := range ports {
		name := wildcard + "_" + strconv.Itoa(p.Port)
		c := cluster.SubsetKey(cluster.Inbound, "", "", p.Port)
		op := ""
		if len(p.Services) > 0 {
			op = p.Services[0].Hostname + ":" + strconv.Itoa(p.ServicePort) + "/*"
		}
		l.FilterChains = append(l.FilterChains, o.inboundChains(name, wrapperspb.UInt32(uint32(p.Port)), p.Protocol,
			inboundHTTP("inbound_"+name+";", c, c, "inbound|http|"+strconv.Itoa(p.Port), op, o),
			func() *listenerv3.Filter { return tcpProxy(c, o, true) })...)
	}
	return l
}

// inboundChains are the chains of one destination (a port, or every other
// port when port is nil) for a protocol. Every chain starts with the
// metadata exchange.
func (o Options) inboundChains(name string, port *wrapperspb.UInt32Value, proto protocol.Instance,
	httpFilter func() *listenerv3.Filter, tcpFilter func() *listenerv3.Filter) []*listenerv3.FilterChain {
	// mtls is the transport of chains that terminate mTLS: TCP ones also
	// accept the peer exchange protocol
	type mtls int
	const (
		plain mtls = iota
		mtlsHTTP
		mtlsTCP
	)
	chain := func(name, transport string, alpn []string, tls mtls, f *listenerv3.Filter) *listenerv3.FilterChain {
		fc := &listenerv3.FilterChain{
			Name:             name,
			FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: port, TransportProtocol: transport, ApplicationProtocols: alpn},
			Filters:          []*listenerv3.Filter{metadataExchange(), f},
		}
		if tls != plain {
			fc.TransportSocket = o.mtlsSocket(tls == mtlsTCP)
		}
		return fc
	}
	switch {
	case proto.IsHTTP() && port != nil:
		return []*listenerv3.FilterChain{
			chain(name, "tls", mtlsPortALPNs, mtlsHTTP, httpFilter()),
			chain(name, "raw_buffer", nil, plain, httpFilter()),
		}
	case proto == protocol.Unsupported:
		httpName := name
		if port == nil {
			httpName = name + "-catchall-http"
		}
		return []*listenerv3.FilterChain{
			chain(httpName, "tls", telemetry.MTLSHTTPALPNs, mtlsHTTP, httpFilter()),
			chain(httpName, "raw_buffer", plainHTTPALPN, plain, httpFilter()),
			chain(name, "tls", mtlsTCPALPNs, mtlsTCP, tcpFilter()),
			chain(name, "raw_buffer", nil, plain, tcpFilter()),
			chain(name, "tls", nil, plain, tcpFilter()),
		}
	default:
		return []*listenerv3.FilterChain{
			chain(name, "tls", mtlsTCPALPNs, mtlsTCP, tcpFilter()),
			chain(name, "raw_buffer", nil, plain, tcpFilter()),
			chain(name, "tls", nil, plain, tcpFilter()),
		}
	}
}

// inboundHTTP is the connection manager of an inbound HTTP chain: one route
// to the inbound cluster, with Istio's inbound settings (client certificate
// details forwarded, no timeout, retry only before the request is sent).
func inboundHTTP(statPrefix, routeName, clusterName, vhost, operation string, o Options) func() *listenerv3.Filter {
	return func() *listenerv3.Filter {
		m := connectionManager(statPrefix, telemetry.Inbound, o)
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
					RetryPolicy:       &routev3.RetryPolicy{RetryOn: "reset-before-request", NumRetries: wrapperspb.UInt32(2)},
					MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(0), GrpcTimeoutHeaderMax: durationpb.New(0)},
				}},
				Decorator: &routev3.Decorator{Operation: operation},
			}}}},
			ValidateClusters: wrapperspb.Bool(false),
		}}
		return hcmFilter(m)
	}
}

// knownProtocolPorts are the inbound ports whose protocol is declared, where
// the HTTP inspector has nothing to find out.
func (o Options) knownProtocolPorts() []int {
	var out []int
	for _, p := range o.Inbound {
		if p.Protocol != protocol.Unsupported {
			out = append(out, p.Port)
		}
	}
	sort.Ints(out)
	return out
}

// withDisabled turns a listener filter off for connections to the ports.
func withDisabled(f *listenerv3.ListenerFilter, ports []int) *listenerv3.ListenerFilter {
	rng := func(p int) *listenerv3.ListenerFilterChainMatchPredicate {
		return &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_DestinationPortRange{
			DestinationPortRange: &typev3.Int32Range{Start: int32(p), End: int32(p + 1)}}}
	}
	if len(ports) == 1 {
		f.FilterDisabled = rng(ports[0])
		return f
	}
	or := &listenerv3.ListenerFilterChainMatchPredicate_MatchSet{}
	for _, p := range ports {
		or.Rules = append(or.Rules, rng(p))
	}
	f.FilterDisabled = &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_OrMatch{OrMatch: or}}
	return f
}

// mtlsSocket terminates Istio mTLS with the workload's certificate,
// requiring a client certificate of the mesh's trust domain. A TCP chain
// also offers the peer exchange protocol.
func (o Options) mtlsSocket(tcp bool) *core.TransportSocket {
	key := mtlsKey{o.TrustDomain, tcp}
	if ts, ok := mtlsSockets.Load(key); ok {
		return ts.(*core.TransportSocket)
	}
	ts := o.buildMTLSSocket(tcp)
	mtlsSockets.Store(key, ts)
	return ts
}

// mtlsSockets memoises mtlsSocket: the sockets are shared, never modified.
var mtlsSockets sync.Map // mtlsKey -> *core.TransportSocket

type mtlsKey struct {
	trustDomain string
	tcp         bool
}

func (o Options) buildMTLSSocket(tcp bool) *core.TransportSocket {
	alpn := []string{"h2", "http/1.1"}
	if tcp {
		alpn = append([]string{telemetry.PeerExchangeALPN}, alpn...)
	}
	td := o.TrustDomain
	if td == "" {
		td = "cluster.local"
	}
	ctx := &tlsv3.DownstreamTlsContext{
		RequireClientCertificate: wrapperspb.Bool(true),
		CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsParams: &tlsv3.TlsParameters{
				TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
				TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
				CipherSuites: []string{"ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256",
					"ECDHE-RSA-AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-GCM-SHA256"},
			},
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{cluster.SDSSecretConfig(cluster.SDSDefault)},
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlsv3.CertificateValidationContext{MatchSubjectAltNames: []*matcherv3.StringMatcher{{
					MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "spiffe://" + td + "/"}}}},
				ValidationContextSdsSecretConfig: cluster.SDSSecretConfig(cluster.SDSRootCA),
			}},
			AlpnProtocols: alpn,
		},
	}
	return &core.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: protoconv.MessageToAny(ctx)}}
}
