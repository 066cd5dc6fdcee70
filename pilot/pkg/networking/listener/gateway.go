package listener

import (
	"slices"
	"sort"
	"strconv"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// GatewayOptions are the inputs of a gateway proxy's listeners.
type GatewayOptions struct {
	// Options carry the access log, tracing and the policy filters of
	// HTTP chains (InboundHTTPPolicy: the gateway's ext_authz, jwt_authn
	// and RBAC) and TCP chains (InboundTCPPolicy); the proxy's
	// IDLE_TIMEOUT (IdleTimeout, on connection managers and TCP proxies)
	// and wildcards (Wildcards, DualStack). TCP resolves route
	// destinations to services and DestinationRules, as the sidecar's
	// outbound TCP chains do (TCP proxy timeouts, source-IP hashing,
	// tunnels, outboundClusterStatName, Mongo/Redis/MySQL filters);
	// its Labels and Namespace are not read here.
	Options
	Merged *gateway.Merged
	// VirtualServices bound to a gateway ("namespace/name"), for TCP and
	// TLS servers.
	VirtualServices func(gateway string) []config.Config
	// Services the gateway sees, for AUTO_PASSTHROUGH servers (their
	// subsets are those of the DestinationRule TCP gives for each).
	Services []*model.Service
	// Topology is the proxy's gatewayTopology (trusted hops, client
	// certificate forwarding).
	Topology *meshconfig.Topology
	// Unprivileged gateways cannot listen below 1024: such ports are
	// skipped.
	Unprivileged bool
	// TLSInputs are the mesh and proxy inputs of terminated TLS.
	TLSInputs GatewayTLS
	// Problems collects what was left out (nil: not collected).
	Problems *[]string
}

// gatewayChain is one filter chain before it is packed.
type gatewayChain struct {
	sni     []string
	alpn    []string
	tls     *tlsv3.DownstreamTlsContext
	filters []*listenerv3.Filter
}

// BuildGateway builds the listeners of a gateway proxy: one per listen
// port (and bind), sorted by name. A listener no chain is left for is
// omitted.
func BuildGateway(o GatewayOptions) []*listenerv3.Listener {
	m := o.Merged
	if m == nil {
		return nil
	}
	o.Options = o.direction(o.TelemetryOut)
	type pending struct {
		bind   string
		extra  []string
		port   uint32
		chains []gatewayChain
	}
	byName := map[string]*pending{}
	tlsHosts := map[uint32]map[string]string{} // listen port -> SNI host -> bind
	var names []string
	for _, sp := range m.Ports {
		if o.Unprivileged && sp.Number < 1024 {
			o.problem("port " + strconv.Itoa(int(sp.Number)) + " skipped: an unprivileged gateway cannot listen below 1024")
			continue
		}
		servers := m.Servers[sp]
		if servers == nil {
			continue
		}
		// the proxy's first wildcard (:: for an IPv6-only gateway), and
		// under ISTIO_DUAL_STACK its others as additional addresses; a
		// server's own bind stands alone, as in Istio
		ws := o.wildcards()
		bind, extra := ws[0], ws[1:]
		if !o.DualStack {
			extra = nil
		}
		if sp.Bind != "" {
			bind, extra = sp.Bind, nil
		}
		name := bind + "_" + strconv.Itoa(int(sp.Number))
		p := byName[name]
		if p == nil {
			p = &pending{bind: bind, extra: extra, port: sp.Number}
			byName[name] = p
			names = append(names, name)
		}
		p.chains = append(p.chains, o.portChains(name, sp, servers, tlsHosts)...)
	}
	sort.Strings(names)
	out := make([]*listenerv3.Listener, 0, len(names))
	for _, name := range names {
		p := byName[name]
		if len(p.chains) == 0 {
			o.problem("listener " + name + " omitted: none of its servers has a route")
			continue
		}
		l := gatewayListener(name, p.bind, p.port, p.chains)
		// connections no chain takes are logged at the listener, as Istio's
		// buildGatewayListeners does (setListenerAccessLog, class gateway)
		l.AccessLog = o.noRouteLogs()
		l.AdditionalAddresses = additionalAddresses(p.extra, int(p.port))
		l.PerConnectionBufferLimitBytes = PerConnectionBufferLimit(o.ConnectionSettings)
		out = append(out, l)
	}
	o.withTCPStats(out...)
	return out
}

func (o GatewayOptions) problem(s string) {
	if o.Problems != nil {
		*o.Problems = append(*o.Problems, s)
	}
}

// portChains are the chains of one server port: one HTTP chain for plain
// HTTP servers (they share a route configuration), else a chain per server
// (TLS-terminated HTTPS, or TCP by route).
func (o GatewayOptions) portChains(listener string, sp gateway.ServerPort, servers *gateway.Servers, tlsHosts map[uint32]map[string]string) []gatewayChain {
	if protocol.Parse(sp.Protocol).IsHTTP() {
		return []gatewayChain{{filters: []*listenerv3.Filter{o.gatewayHTTP("outbound_"+listener+";", servers.RouteName)}}}
	}
	var out []gatewayChain
	for _, s := range servers.Servers {
		info := o.Merged.TLS[s]
		if s.GetTls() != nil && !gateway.IsPassthrough(s) {
			if err := o.credentialsError(s); err != nil {
				o.problem("gateway " + o.Merged.GatewayOf[s] + ": server " + s.GetPort().GetName() + " (port " +
					strconv.Itoa(int(s.Port.Number)) + ") left out: " + err.Error())
				continue
			}
		}
		if gateway.IsHTTPSTerminated(s) && info != nil {
			prefix := s.Name
			if prefix == "" {
				prefix = "outbound_" + listener + ";"
			}
			out = append(out, gatewayChain{sni: info.SNIHosts, tls: o.serverTLS(s),
				filters: []*listenerv3.Filter{o.gatewayHTTP(prefix, info.RouteName)}})
			continue
		}
		out = append(out, o.tcpServerChains(s, sp.Number, tlsHosts)...)
	}
	return out
}

// gatewayHTTP is the connection manager of a gateway's HTTP chain.
func (o GatewayOptions) gatewayHTTP(statPrefix, routeName string) *listenerv3.Filter {
	m := connectionManager(statPrefix, telemetry.Outbound, o.Options)
	fs := []*hcm.HttpFilter{m.HttpFilters[0]}
	fs = append(fs, o.InboundHTTPPolicy...)
	m.HttpFilters = append(fs, m.HttpFilters[1:]...)
	m.RouteSpecifier = &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{ConfigSource: adsSource(), RouteConfigName: routeName}}
	m.UseRemoteAddress = wrapperspb.Bool(true)
	m.HttpProtocolOptions = &core.Http1ProtocolOptions{}
	m.ServerName = "istio-envoy"
	m.XffNumTrustedHops = o.Topology.GetNumTrustedProxies()
	m.ForwardClientCertDetails = hcm.HttpConnectionManager_SANITIZE_SET
	if f := o.Topology.GetForwardClientCertDetails(); f != meshconfig.ForwardClientCertDetails_UNDEFINED {
		m.ForwardClientCertDetails = forwardClientCert(f)
	}
	if d := m.ForwardClientCertDetails; d == hcm.HttpConnectionManager_APPEND_FORWARD || d == hcm.HttpConnectionManager_SANITIZE_SET {
		m.SetCurrentClientCertDetails = &hcm.HttpConnectionManager_SetCurrentClientCertDetails{
			Subject: wrapperspb.Bool(true), Cert: true, Dns: true, Uri: true}
	}
	return hcmFilter(m)
}

// forwardClientCert maps the mesh enum to Envoy's (they are offset by one:
// the mesh's 0 is UNDEFINED).
func forwardClientCert(f meshconfig.ForwardClientCertDetails) hcm.HttpConnectionManager_ForwardClientCertDetails {
	switch f {
	case meshconfig.ForwardClientCertDetails_FORWARD_ONLY:
		return hcm.HttpConnectionManager_FORWARD_ONLY
	case meshconfig.ForwardClientCertDetails_APPEND_FORWARD:
		return hcm.HttpConnectionManager_APPEND_FORWARD
	case meshconfig.ForwardClientCertDetails_SANITIZE_SET:
		return hcm.HttpConnectionManager_SANITIZE_SET
	case meshconfig.ForwardClientCertDetails_ALWAYS_FORWARD_ONLY:
		return hcm.HttpConnectionManager_ALWAYS_FORWARD_ONLY
	}
	return hcm.HttpConnectionManager_SANITIZE
}

// gatewayListener packs the chains; a TLS inspector reads SNI and ALPN when
// a chain matches on them.
func gatewayListener(name, bind string, port uint32, chains []gatewayChain) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name:                                 name,
		Address:                              address(bind, int(port)),
		TrafficDirection:                     core.TrafficDirection_OUTBOUND,
		MaxConnectionsToAcceptPerSocketEvent: wrapperspb.UInt32(1),
	}
	for _, c := range chains {
		if len(c.sni) > 0 || len(c.tls.GetCommonTlsContext().GetAlpnProtocols()) > 0 {
			l.ListenerFilters = []*listenerv3.ListenerFilter{tlsInspector()}
			break
		}
	}
	for _, c := range chains {
		fc := &listenerv3.FilterChain{Filters: c.filters, TransportSocketConnectTimeout: connectTimeout}
		// a host "*" matches every name: no server names then, and no
		// match at all without ALPN (Istio's toFilterChainMatch)
		sni := c.sni
		if slices.Contains(sni, "*") {
			sni = nil
		}
		if len(sni) > 0 || len(c.alpn) > 0 {
			fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: sni, ApplicationProtocols: c.alpn}
		}
		if c.tls != nil {
			fc.TransportSocket = authn.TransportSocket(c.tls)
		}
		l.FilterChains = append(l.FilterChains, fc)
	}
	return l
}
