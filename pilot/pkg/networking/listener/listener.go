package listener

import (
	"sort"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Well-known listener names and ports.
const (
	VirtualOutbound = "virtualOutbound"
	VirtualInbound  = "virtualInbound"
	OutboundPort    = 15001
	InboundPort     = 15006
	wildcard        = "0.0.0.0"
)

// Options are the proxy-dependent inputs.
type Options struct {
	// AllowAny sends unknown outbound traffic to PassthroughCluster,
	// otherwise to BlackHoleCluster (REGISTRY_ONLY).
	AllowAny bool
	// DynamicDNSCache is the DNS cache of a sidecar under the
	// ALLOW_ANY_DYNAMIC_DNS outbound policy (nil: any other policy, and
	// gateways): virtualOutbound sends plain HTTP to unknown hosts to the
	// dynamic forward proxy cluster, and every outbound HTTP connection
	// manager resolves hosts on it. AllowAny is set with it.
	DynamicDNSCache *dfpcommonv3.DnsCacheConfig
	// DNSLookupFamily is the family the proxy's DNS caches resolve (see
	// cluster.DNSLookupFamily): the caches of DYNAMIC_DNS wildcard
	// ServiceEntries' forward proxy filters, which must match their
	// clusters'.
	DNSLookupFamily clusterv3.Cluster_DnsLookupFamily
	// Inbound are the proxy's own ports that services target.
	Inbound []InboundTarget
	// AccessLogFile and AccessLogFormat come from the mesh config; an empty
	// file means no access log.
	AccessLogFile   string
	AccessLogFormat string
	// Tracing is the HCM tracing block of the proxy (nil: no tracing).
	Tracing *hcm.HttpConnectionManager_Tracing
	// TrustDomain is the mesh's; inbound mTLS accepts its identities.
	TrustDomain string
	// MTLS is the workload's effective PeerAuthentication (zero: PERMISSIVE
	// on every port).
	MTLS authn.Policy
	// TLS are the sockets of mTLS chains (nil: built from TrustDomain).
	TLS *authn.InboundTLS
	// InboundHTTPPolicy are the authentication and authorization filters
	// of inbound HTTP chains, in order (ext_authz, jwt_authn, RBAC); they
	// follow the peer metadata filter.
	InboundHTTPPolicy []*hcm.HttpFilter
	// InboundTCPPolicy are the authorization filters of inbound TCP
	// chains, in order; they follow the metadata exchange, before the TCP
	// proxy.
	InboundTCPPolicy []*listenerv3.Filter
	// TelemetryIn and TelemetryOut are what Telemetry resources configure
	// on inbound and outbound (gateway: outbound) listeners; nil: the mesh
	// config's access log and Tracing above, no stats filters.
	TelemetryIn, TelemetryOut *Telemetry

	// NoRedirect: the proxy's traffic is not redirected to it
	// (INTERCEPTION_MODE NONE), so there is no virtualInbound or
	// virtualOutbound and its listeners bind to their ports.
	NoRedirect bool
	// Transparent: the proxy's traffic is redirected by TPROXY
	// (INTERCEPTION_MODE TPROXY), so its virtual listeners are
	// transparent and virtualInbound restores the client's address.
	Transparent bool
	// Wildcards are the proxy's wildcard addresses by IP mode: 0.0.0.0,
	// :: for an IPv6-only proxy, both for a dual-stack one (nil: 0.0.0.0).
	// The virtual listeners and the chains of service ports take the first.
	Wildcards []string
	// DualStack is ISTIO_DUAL_STACK: the virtual listeners of a dual-stack
	// proxy also listen on its other wildcard.
	DualStack bool
	// IPv4OutboundForIPv6 is ISTIO_ENABLE_IPV4_OUTBOUND_LISTENER_FOR_IPV6_CLUSTERS:
	// the virtualOutbound of an IPv6-only proxy also listens on 0.0.0.0.
	IPv4OutboundForIPv6 bool
	// ConnectionSettings are the proxy's resolved ProxyConfig
	// connectionSettings (ResolveConnectionSettings; nil: none), applied
	// last to every HTTP connection manager, and to gateway listeners.
	ConnectionSettings *meshconfig.ProxyConfig_ConnectionSettings
	// Egress are the Sidecar's egress listeners when one of them sets a
	// port, a bind or a capture mode, or the proxy does not redirect (nil:
	// every service the sidecar sees is built the same way).
	Egress []EgressListener

	// CanBind tells whether the proxy may listen on bind:port (nil: it
	// may): an unprivileged proxy cannot bind to a port below 1024, and
	// no listener may take a port of the proxy's own static listeners.
	CanBind func(bindToPort bool, bind string, port int, p protocol.Instance) bool

	// ProtocolDetectionTimeout is the mesh's protocolDetectionTimeout:
	// how long the listener filters of an outbound listener with an HTTP
	// inspector, and of every inbound listener, may wait for the first
	// bytes (nil: 0s, no limit, the mesh default).
	ProtocolDetectionTimeout *durationpb.Duration

	// Addresses are the addresses the proxy reaches a service on, the
	// primary first (Istio's GetAddressForProxy, then
	// GetExtraAddressesForProxy): the listeners of its TCP and sniffed
	// ports bind to the first and take the others as additional addresses
	// (nil or empty: the default address alone).
	Addresses func(svc *model.Service) []string

	// DNSDomain is the proxy's DNS domain ("<namespace>.svc.<suffix>",
	// its node ID's fourth field): the server names of a TLS port's own
	// chain include the short names of the service's ExternalName aliases.
	DNSDomain string

	// Instances are the addresses of each endpoint of a service's port
	// (nil: none known): a headless service's TCP and sniffed ports get a
	// listener per endpoint (outbound_headless.go). SelfIP is the proxy's
	// first address, whose endpoint gets none.
	Instances func(svc *model.Service, p *model.Port) [][]string
	SelfIP    string

	// VirtualServices are the mesh VirtualServices the sidecar sees, in
	// Istio's order, for the listeners built without Egress (with Egress,
	// each EgressListener carries its own); their tcp routes and the
	// DestinationRules TCP resolves decide the TCP chains (nil and zero:
	// each TCP port goes to its own cluster).
	VirtualServices []*config.Config
	TCP             TCPRouting

	// IdleTimeout is the proxy's IDLE_TIMEOUT (nil: none): the idle
	// timeout of its TCP proxies where no DestinationRule sets one, and of
	// its HTTP connection managers' connections.
	IdleTimeout *durationpb.Duration

	// dir is the Telemetry of the direction being built
	dir *Telemetry
	// serviceDNSCache is the DNS cache of the DYNAMIC_DNS service whose
	// HTTP chain is being built (nil: none)
	serviceDNSCache *dfpcommonv3.DnsCacheConfig
}

// Telemetry is what Telemetry resources configure on one side of a proxy.
type Telemetry struct {
	// Logs replace the mesh config's file log when LogsSet (empty: none).
	Logs    []*accesslogv3.AccessLog
	LogsSet bool
	// Tracing replaces Options.Tracing when TracingSet (nil: none).
	Tracing    *hcm.HttpConnectionManager_Tracing
	TracingSet bool
	// NoRequestIDSampling: the request ID does not decide sampling.
	NoRequestIDSampling bool
	// HTTPStats go right before the router of HTTP chains, TCPStats right
	// before the TCP proxy of TCP chains.
	HTTPStats []*hcm.HttpFilter
	TCPStats  []*listenerv3.Filter
}

// direction returns o for the listeners of one side.
func (o Options) direction(t *Telemetry) Options {
	o.dir = t
	return o
}

// tracing is the HCM tracing of the side being built.
func (o Options) tracing() *hcm.HttpConnectionManager_Tracing {
	if o.dir != nil && o.dir.TracingSet {
		return o.dir.Tracing
	}
	return o.Tracing
}

// withTCPStats puts the side's TCP stats filters right before the TCP proxy
// of every chain of the listeners (before the protocol filters that come
// with it: mongo_proxy, mysql_proxy, or redis_proxy in its place).
func (o Options) withTCPStats(ls ...*listenerv3.Listener) {
	if o.dir == nil || len(o.dir.TCPStats) == 0 {
		return
	}
	add := func(fc *listenerv3.FilterChain) {
		if fc == nil || len(fc.Filters) == 0 || !isProtocolStack(fc.Filters[len(fc.Filters)-1].Name) {
			return
		}
		n := len(fc.Filters) - 1
		for n > 0 && isProtocolStack(fc.Filters[n-1].Name) {
			n--
		}
		fs := append(append(append([]*listenerv3.Filter{}, fc.Filters[:n]...), o.dir.TCPStats...), fc.Filters[n:]...)
		fc.Filters = fs
	}
	for _, l := range ls {
		for _, fc := range l.FilterChains {
			add(fc)
		}
		add(l.DefaultFilterChain)
	}
}

// InboundTarget is a port of the proxy's workload that services target.
type InboundTarget struct {
	// Port is the workload's (target) port.
	Port int
	// Protocol is the protocol the targeting services declare for it.
	Protocol protocol.Instance
	// Services target the port, sorted by host; ServicePort is the first
	// one's port number.
	Services    []*model.Service
	ServicePort int
	// Endpoint is where a Sidecar ingress listener's defaultEndpoint sends
	// the port's traffic (an IP, or a unix:// path) and EndpointPort its
	// port; empty: the original destination.
	Endpoint     string
	EndpointPort int
	// Bind is the address the port's chains are named after and, when
	// BindToPort, its own listener binds to (empty: 0.0.0.0).
	Bind string
	// ExtraBinds are the other addresses its own listener listens on
	// under ISTIO_DUAL_STACK (Options.DualStack): the second wildcard of a
	// dual-stack proxy whose Sidecar ingress listener defaults to the
	// wildcards.
	ExtraBinds []string
	// BindToPort makes the port a listener of its own that binds to it,
	// instead of chains of virtualInbound.
	BindToPort bool
	// TraceHost is the name a Sidecar ingress listener's port has in its
	// routes' trace operation ("<sidecar>.<namespace>:<port>/*"): Istio
	// gives such a port that synthetic hostname (buildInboundChainConfigs),
	// whichever services target it. Empty for a service's port, whose
	// operation names the first service.
	TraceHost string
	// Config is the path of the Sidecar the port comes from
	// ("/apis/networking.istio.io/v1/namespaces/<ns>/sidecar/<name>"),
	// recorded in its chains' metadata; empty for a service's port.
	Config string
	// TLS is the Sidecar ingress listener's own TLS; it replaces the
	// port's chains where its PeerAuthentication mode is DISABLE.
	// Protocol is then the one after TLS termination.
	TLS *tlsv3.DownstreamTlsContext
	// NoListener: the proxy cannot listen on the port (privileged, or a
	// static listener's); callers leave it out of the listeners and keep
	// its cluster.
	NoListener bool
}

// BuildInbound builds virtualInbound, the one listener that depends on the
// proxy's own ports (Options.Inbound).
func BuildInbound(o Options) *listenerv3.Listener {
	o = o.direction(o.TelemetryIn)
	l := virtualInbound(o)
	o.withTCPStats(l)
	return l
}

// BuildOutbound builds the listeners for the services a sidecar sees and
// virtualOutbound; they ignore Options.Inbound, so sidecars that see the
// same services with the same options (SelfIP included) can share them. With
// Options.Egress, the Sidecar's egress listeners decide the listeners
// instead of services. Sorted by name.
func BuildOutbound(services []*model.Service, o Options) []*listenerv3.Listener {
	o = o.direction(o.TelemetryOut)
	o = o.withTCPRoutesOnly()
	var out []*listenerv3.Listener
	if o.Egress != nil {
		out = egressOutbound(o)
	} else {
		out = classicOutbound(services, o.VirtualServices, o, nil)
	}
	if !o.NoRedirect {
		out = append(out, virtualOutbound(o))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	o.withTCPStats(out...)
	return out
}

// classicOutbound builds the listeners of the services the proxy reaches
// by redirection, as Istio's catch-all egress listener does: HTTP ports
// share the wildcard, TCP and sniffed ports take the service's VIP (the
// wildcard, with a CIDR match when the address is a CIDR, without one),
// and ports that meet on one address merge by Istio's conflict rules.
// Keys in taken ("<bind>|<port>") belong to listeners built before (a
// Sidecar's egress listeners with a port) and are left alone, as Istio
// locks them.
func classicOutbound(services []*model.Service, vss []*config.Config, o Options, taken map[string]bool) []*listenerv3.Listener {
	entries := map[string]*egressEntry{}
	var order []string
	for k := range taken {
		// a listener built before keeps its address and port
		entries[k] = &egressEntry{locked: true}
	}
	for _, svc := range services {
		for _, p := range svc.Ports {
			if !o.canBind(false, "", p.Port, p.Protocol) {
				// a port that a static or capture listener of the proxy
				// holds (15001, 15021, ...)
				continue
			}
			if binds, ok := instanceBinds(svc, p, o); ok {
				for _, b := range binds {
					addEgress(entries, &order, EgressListener{Bind: b, VirtualServices: vss}, svc, p, o)
				}
				continue
			}
			addEgress(entries, &order, EgressListener{VirtualServices: vss}, svc, p, o)
		}
	}
	out := make([]*listenerv3.Listener, 0, len(order))
	for _, k := range order {
		out = append(out, entries[k].build(o))
	}
	return out
}

func hasVIP(svc *model.Service) bool {
	return svc.DefaultAddress != "" && svc.DefaultAddress != model.UnspecifiedIP
}

func address(ip string, port int) *core.Address {
	return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
		Address: ip, PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)}}}}
}

// tcpProxy sends a connection to a cluster; withLog adds the mesh's access log.
func tcpProxy(clusterName string, o Options, withLog bool) *listenerv3.Filter {
	tp := &tcpproxy.TcpProxy{StatPrefix: clusterName, ClusterSpecifier: &tcpproxy.TcpProxy_Cluster{Cluster: clusterName},
		IdleTimeout: o.IdleTimeout}
	if withLog {
		tp.AccessLog = o.accessLogs()
	}
	return &listenerv3.Filter{Name: "envoy.filters.network.tcp_proxy", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: protoconv.MessageToAny(tp)}}
}

// metadataExchange is the network filter that reads the peer's workload
// metadata on inbound connections.
func metadataExchange() *listenerv3.Filter {
	return &listenerv3.Filter{Name: telemetry.MetadataExchangeName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: telemetry.MetadataExchange()}}
}

// loopGuard drops connections addressed to the capture port itself, which
// would otherwise loop through the listener forever.
func loopGuard(listener string, port int, filters ...*listenerv3.Filter) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{
		Name:             listener + "-blackhole",
		FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(uint32(port))},
		Filters:          append(filters, tcpProxy(cluster.BlackHole, Options{}, false)),
	}
}

// fallbackCluster takes outbound traffic to unknown destinations.
func (o Options) fallbackCluster() string {
	if o.AllowAny {
		return cluster.Passthrough
	}
	return cluster.BlackHole
}

// sniffing makes a listener wait for its listener filters for as long as
// they need, and go on without their verdict if they give up.
func sniffing(l *listenerv3.Listener) {
	l.ListenerFiltersTimeout = durationpb.New(0)
	l.ContinueOnListenerFiltersTimeout = true
}

// inboundSniffing is sniffing with the mesh's protocolDetectionTimeout,
// which Istio puts on every inbound listener, whatever its inspectors.
func (o Options) inboundSniffing(l *listenerv3.Listener) {
	sniffing(l)
	if o.ProtocolDetectionTimeout != nil {
		l.ListenerFiltersTimeout = durationpb.New(o.ProtocolDetectionTimeout.AsDuration())
	}
}

// wildcards are the proxy's wildcard addresses, the first one primary.
func (o Options) wildcards() []string {
	if len(o.Wildcards) == 0 {
		return []string{wildcard}
	}
	return o.Wildcards
}

// transparent is the listener's transparent flag: set, to true, only for a
// TPROXY proxy.
func (o Options) transparent() *wrapperspb.BoolValue {
	if o.Transparent {
		return wrapperspb.Bool(true)
	}
	return nil
}

// virtualAddresses are the additional addresses of a virtual listener on
// port: the other wildcards of a dual-stack proxy under ISTIO_DUAL_STACK
// and, when ipv4ForIPv6 (virtualOutbound only), 0.0.0.0 for an IPv6-only
// proxy under its own flag.
func (o Options) virtualAddresses(port int, ipv4ForIPv6 bool) []*listenerv3.AdditionalAddress {
	ws := o.wildcards()
	var extra []string
	switch {
	case o.DualStack && len(ws) > 1:
		extra = ws[1:]
	case ipv4ForIPv6 && o.IPv4OutboundForIPv6 && len(ws) == 1 && ws[0] == "::":
		extra = []string{wildcard}
	}
	return additionalAddresses(extra, port)
}

// serviceAddresses are the addresses the proxy reaches a service on, the
// primary first (Options.Addresses; without it, the default address).
func (o Options) serviceAddresses(svc *model.Service) []string {
	if o.Addresses != nil {
		if addrs := o.Addresses(svc); len(addrs) > 0 {
			return addrs
		}
	}
	return []string{svc.DefaultAddress}
}

// additionalAddresses are the extra addresses of a listener on port.
func additionalAddresses(ips []string, port int) []*listenerv3.AdditionalAddress {
	var out []*listenerv3.AdditionalAddress
	for _, ip := range ips {
		if ip != "" {
			out = append(out, &listenerv3.AdditionalAddress{Address: address(ip, port)})
		}
	}
	return out
}
