package listener

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// UnixPrefix starts a bind (or endpoint) that is a Unix domain socket.
const UnixPrefix = "unix://"

// Localhost is where a listener that binds to its port listens when its
// egress listener names no bind.
const Localhost = "127.0.0.1"

// EgressListener is one egress listener of the proxy's Sidecar, resolved
// for the proxy.
type EgressListener struct {
	// Port is the listener's port; 0 with HasPort for a Unix socket.
	Port    int
	HasPort bool
	// Protocol is the port's declared protocol, PortName its name.
	Protocol protocol.Instance
	PortName string
	// Bind is the address the Sidecar gives (empty: the services' VIPs or
	// the wildcard, or Localhost when BindToPort).
	Bind string
	// ExtraBinds are the other addresses the listeners of Bind listen on
	// (additional addresses): the other loopback (::1) of a dual-stack
	// proxy's localhost bind, as Istio binds those to all of the proxy's
	// localhosts.
	ExtraBinds []string
	// BindToPort: the listener binds to its port (captureMode NONE, a
	// Unix socket, or a proxy that does not redirect).
	BindToPort bool
	// Services are those the listener imports (trimmed to Port).
	Services []*model.Service
	// VirtualServices are the mesh VirtualServices the listener imports,
	// in Istio's order; their tcp routes decide its TCP chains.
	VirtualServices []*config.Config
}

// egressChain is one filter chain of an outbound listener being built:
// its match, and either an HTTP connection manager (routes named rds) or
// a TCP proxy to a cluster.
type egressChain struct {
	transport string
	alpn      []string
	sni       []string
	cidr      []string
	http      bool
	rds       string
	cluster   string
	// weighted are the clusters of a tcp route with several destinations
	// (then cluster is empty and statPrefix names the VirtualService)
	weighted []*tcpproxy.TcpProxy_WeightedCluster_ClusterWeight
	// statPrefix is the TCP proxy's stat prefix ("": the cluster's name)
	statPrefix string
	// hashSourceIP: the DestinationRule hashes connections by source IP
	hashSourceIP bool
	// idle and maxDuration are the TCP proxy's idle timeout and maximum
	// connection duration: the DestinationRule's top-level tcp pool
	// settings (nil: Envoy's defaults)
	idle, maxDuration *durationpb.Duration
	// config is the path of the VirtualService the chain comes from,
	// recorded in its metadata ("": none)
	config string
	// stack is the protocol of the listener port the chain was built for:
	// Mongo, Redis and MySQL put their own filters around the TCP proxy
	// (outbound_protocols.go)
	stack protocol.Instance
	// tunnel is the DestinationRule's tunnel for the chain's destination
	// (nil: none)
	tunnel *tcpproxy.TcpProxy_TunnelingConfig
	// dynamicDNS is the host of the DYNAMIC_DNS wildcard ServiceEntry
	// the chain was built for (its own HTTP chain, or its port's own TCP
	// chain): a forward proxy filter resolves the host the client asked
	// for on the host's DNS cache ("": none)
	dynamicDNS string
	// dynamicDNSPort is the port the TCP chain's SNI forward proxy
	// connects to
	dynamicDNSPort int
}

// matchAll: the chain matches every connection; a server name "*" matches
// any name, as in Istio.
func (c *egressChain) matchAll() bool {
	return (len(c.sni) == 0 || slices.Contains(c.sni, "*")) && len(c.alpn) == 0 && c.transport == "" && len(c.cidr) == 0
}

// conflicts: two chains that match the same connections (server names in
// any order, "*" left out, as Istio compares them).
func (c *egressChain) conflicts(o *egressChain) bool {
	return c.transport == o.transport && slices.Equal(c.alpn, o.alpn) && slices.Equal(sniSet(c.sni), sniSet(o.sni)) &&
		slices.Equal(maskedCIDRs(c.cidr), maskedCIDRs(o.cidr))
}

// sniSet are the server names sorted and without duplicates or "*".
func sniSet(sni []string) []string {
	out := slices.DeleteFunc(slices.Clone(sni), func(s string) bool { return s == "*" })
	slices.Sort(out)
	return slices.Compact(out)
}

// maskedCIDRs are the networks of CIDRs, sorted: 10.0.1.0/16 and
// 10.0.2.0/16 match the same destinations; the unspecified address
// matches anything and counts as no CIDR, as in Istio.
func maskedCIDRs(cidrs []string) []string {
	out := make([]string, 0, len(cidrs))
	for _, c := range cidrs {
		// an address alone is its own /32 (or /128), as in Istio
		if r := cidrRange(c); r != nil && r.AddressPrefix != wildcard {
			p := netip.PrefixFrom(netip.MustParseAddr(r.AddressPrefix), int(r.PrefixLen.GetValue()))
			out = append(out, p.Masked().String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// egressEntry is an outbound listener being built, keyed by bind and port.
type egressEntry struct {
	bind string
	// extra are the additional addresses of the listener, those of the
	// service port that created it (Istio keeps the first one's binds)
	extra      []string
	port       int
	bindToPort bool
	proto      protocol.Instance
	chains     []*egressChain
	locked     bool
}

// egressOutbound builds the outbound listeners of a Sidecar's egress
// listeners in order, as Istio does: a listener on a port takes its
// services on that port with the listener's protocol (HTTP on the
// wildcard or the bind, TCP on each service's VIP or the bind); once such
// listeners exist, the catch-all listener (no port) adds nothing to them.
// Two services on one bind and port merge: HTTP and TCP turn into a
// sniffed listener, TCP chains that match the same connections keep the
// first.
func egressOutbound(o Options) []*listenerv3.Listener {
	entries := map[string]*egressEntry{}
	var order []string
	var classic []*model.Service
	var classicVS []*config.Config
	classicUsed := false
	for _, e := range o.Egress {
		if e.HasPort {
			if !o.canBind(e.BindToPort, e.bindOrDefault(), e.Port, e.Protocol) {
				continue
			}
			for _, svc := range e.Services {
				addEgress(entries, &order, e, svc, &model.Port{Name: e.PortName, Port: e.Port, Protocol: e.Protocol}, o)
			}
			continue
		}
		for _, en := range entries {
			en.locked = true
		}
		if e.Bind == "" && !e.BindToPort {
			// redirected traffic to the services' own addresses: the
			// listeners every sidecar gets, minus those taken above
			classic, classicUsed = append(classic, e.Services...), true
			classicVS = append(classicVS, e.VirtualServices...)
			continue
		}
		for _, svc := range e.Services {
			for _, p := range svc.Ports {
				if o.canBind(e.BindToPort, e.bindOrDefault(), p.Port, p.Protocol) {
					addEgress(entries, &order, e, svc, p, o)
				}
			}
		}
	}
	out := make([]*listenerv3.Listener, 0, len(order))
	taken := map[string]bool{}
	for _, k := range order {
		taken[k] = true
		out = append(out, entries[k].build(o))
	}
	if classicUsed {
		out = append(out, classicOutbound(classic, classicVS, o, taken)...)
	}
	return out
}

// bindOrDefault is the bind a listener's ports are checked against.
func (e EgressListener) bindOrDefault() string {
	if e.Bind == "" && e.BindToPort {
		return Localhost
	}
	return e.Bind
}

// canBind asks the caller whether the proxy may listen there.
func (o Options) canBind(bindToPort bool, bind string, port int, p protocol.Instance) bool {
	return o.CanBind == nil || o.CanBind(bindToPort, bind, port, p)
}

// addEgress adds one service port to the listener of its bind and port.
func addEgress(entries map[string]*egressEntry, order *[]string, e EgressListener, svc *model.Service, lp *model.Port, o Options) {
	port, proto := lp.Port, lp.Protocol
	if svc.Resolution == model.Alias || proto == protocol.UDP {
		return // another name for a service that has its own listeners; UDP has none
	}
	ws := o.wildcards()
	a := egressAdd{svc: svc, port: port, proto: proto, lp: authn.ListenerProtocolOf(proto), bind: e.bindOrDefault(), bindToPort: e.BindToPort,
		vss: e.VirtualServices, portName: lp.Name, extra: e.ExtraBinds, wild: ws[0]}
	if a.bind == "" {
		// redirected: HTTP shares the wildcards, TCP and sniffed ports take
		// the VIP and the service's other addresses for the proxy; a CIDR
		// address shares the wildcards and its TCP chains match the CIDRs
		a.bind, a.extra = ws[0], ws[1:]
		// (the proxy's addresses of the service: an address allocated to a
		// ServiceEntry without one counts for a proxy capturing DNS)
		if addrs := o.serviceAddresses(svc); a.lp != authn.ListenerHTTP && addrs[0] != "" && addrs[0] != model.UnspecifiedIP {
			if strings.Contains(addrs[0], "/") {
				a.cidr = addrs
			} else {
				a.bind, a.extra = addrs[0], addrs[1:]
			}
		}
	}
	key := a.bind + "|" + strconv.Itoa(port)
	cur := entries[key]
	if cur != nil && cur.locked {
		return
	}
	if cur != nil && a.wellKnownClash(cur) {
		return
	}
	next := a.apply(cur, o)
	if next != nil && next != cur {
		if cur == nil {
			*order = append(*order, key)
		}
		entries[key] = next
	}
}

// egressAdd is one service port being added to an outbound listener.
type egressAdd struct {
	svc        *model.Service
	port       int
	proto      protocol.Instance
	lp         authn.ListenerProtocol
	bind       string
	bindToPort bool
	// cidr is the service's address when it is a CIDR (on the wildcard)
	cidr []string
	// vss are the VirtualServices of the egress listener
	vss []*config.Config
	// portName is the listener port's name (the service's, or the
	// Sidecar's for its own port), for outboundClusterStatName
	portName string
	// extra are the other addresses of bind (additional addresses)
	extra []string
	// wild is the proxy's first wildcard (:: for an IPv6-only proxy): a
	// listener bound there shares it with HTTP ports, by ALPN
	wild string
}

// apply merges the service port into cur (nil: none yet) as Istio's
// conflict types do, and returns the entry to keep: cur, merged in place,
// or a new one.
func (a egressAdd) apply(cur *egressEntry, o Options) *egressEntry {
	switch {
	case a.proto == protocol.HTTPProxy:
		if cur == nil {
			return a.entry(a.proto, &egressChain{http: true, rds: strconv.Itoa(a.port)})
		}
	case a.lp == authn.ListenerHTTP:
		p := a.proto
		if a.bind == a.wild {
			p = protocol.Unsupported // HTTP by ALPN, the rest to the passthrough
		}
		switch {
		case cur == nil:
			return a.entry(p, a.httpChain())
		case cur.proto.IsTCP():
			cur.merge(a.httpChain())
			cur.proto = protocol.Unsupported
		}
	case a.lp == authn.ListenerTCP:
		if cur == nil {
			return a.entry(a.proto, a.tcpChain(o)...)
		}
		cur.merge(a.tcpChain(o)...)
		if cur.proto.IsHTTP() {
			cur.proto = protocol.Unsupported
		}
	default: // sniffed
		switch {
		case cur == nil, cur.proto.IsHTTP():
			return a.entry(a.proto, append(a.tcpChain(o), a.httpChain())...)
		case cur.proto.IsTCP():
			cur.merge(append(a.tcpChain(o), a.httpChain())...)
			cur.proto = protocol.Unsupported
		}
	}
	return cur
}

func (a egressAdd) entry(p protocol.Instance, chains ...*egressChain) *egressEntry {
	return &egressEntry{bind: a.bind, extra: a.extra, port: a.port, bindToPort: a.bindToPort, proto: p, chains: chains}
}

// wellKnownClash: Mongo and MySQL never share a port with another
// protocol (their clients speak first, an inspector would stall them).
func (a egressAdd) wellKnownClash(cur *egressEntry) bool {
	known := func(p protocol.Instance) bool { return p == protocol.Mongo || p == protocol.MySQL }
	return (known(a.proto) || known(cur.proto)) && a.proto != cur.proto
}

// httpChain routes by the port's routes: the socket's own on a Unix
// socket, the service's own for a sniffed service on a bind; it matches
// by ALPN on the wildcard or when sniffed.
func (a egressAdd) httpChain() *egressChain {
	rds := strconv.Itoa(a.port)
	switch {
	case a.port == 0:
		rds = a.bind
	case a.lp == authn.ListenerAuto && a.bind != a.wild:
		rds = a.svc.Hostname + ":" + strconv.Itoa(a.port)
	}
	hc := &egressChain{http: true, rds: rds}
	if cluster.IsDynamicDNS(a.svc) {
		hc.dynamicDNS = a.svc.Hostname
	}
	if a.bind == a.wild || a.lp == authn.ListenerAuto {
		hc.transport, hc.alpn = authn.TransportRawBuffer, []string{"http/1.1", "h2c"}
	}
	return hc
}

// tcpChain are the TCP chains of the service port: TLS and HTTPS ports
// take the VirtualServices' tls routes (outbound_tls_routes.go), the
// others their tcp routes (outbound_tcp_routes.go).
func (a egressAdd) tcpChain(o Options) []*egressChain {
	if a.proto.IsTLS() {
		return a.tlsChains(o)
	}
	return a.tcpChains(o)
}

// merge adds the chains that match connections no chain of the entry
// matches yet.
func (en *egressEntry) merge(chains ...*egressChain) {
	for _, in := range chains {
		clash := false
		for _, c := range en.chains {
			if c.conflicts(in) {
				clash = true
				break
			}
		}
		if !clash {
			en.chains = append(en.chains, in)
		}
	}
}

// build renders an entry as Istio renders outbound listeners: a chain
// that matches everything is the default chain (the only chain when it is
// alone); otherwise the passthrough takes what no chain matches.
func (en *egressEntry) build(o Options) *listenerv3.Listener {
	name := en.bind + "_" + strconv.Itoa(en.port)
	l := &listenerv3.Listener{
		Name:                name,
		Address:             egressAddress(en.bind, en.port),
		AdditionalAddresses: additionalAddresses(en.extra, en.port),
		TrafficDirection:    core.TrafficDirection_OUTBOUND,
	}
	if en.bindToPort {
		l.MaxConnectionsToAcceptPerSocketEvent = wrapperspb.UInt32(1)
	} else {
		l.BindToPort = wrapperspb.Bool(false)
	}
	sniffing(l)
	var needTLS, needHTTP bool
	for _, c := range en.chains {
		// the SNI forward proxy reads the server name too
		needTLS = needTLS || len(c.sni) > 0 || (!c.http && c.dynamicDNS != "")
		needHTTP = needHTTP || len(c.alpn) > 0
	}
	if needTLS {
		l.ListenerFilters = append(l.ListenerFilters, tlsInspector())
	}
	if needHTTP {
		l.ListenerFilters = append(l.ListenerFilters, httpInspector())
		if o.ProtocolDetectionTimeout != nil {
			// only the HTTP inspector can stall; Istio applies the
			// mesh's limit to it alone
			l.ListenerFiltersTimeout = durationpb.New(o.ProtocolDetectionTimeout.AsDuration())
		}
	}
	for _, c := range en.chains {
		fc := &listenerv3.FilterChain{TransportSocketConnectTimeout: connectTimeout}
		if c.http {
			ho := o
			if c.dynamicDNS != "" {
				ho.serviceDNSCache = o.serviceDNSCacheOf(c.dynamicDNS)
			}
			fc.Filters = []*listenerv3.Filter{outboundHTTP("outbound_"+name+";", c.rds, ho)}
		} else {
			fc.Filters = tcpChainFilters(c, o)
		}
		if c.config != "" {
			fc.Metadata = configMetadata(c.config)
		}
		if c.matchAll() {
			l.DefaultFilterChain = fc
			continue
		}
		fc.FilterChainMatch = &listenerv3.FilterChainMatch{TransportProtocol: c.transport, ApplicationProtocols: c.alpn}
		if len(c.sni) > 0 && !slices.Contains(c.sni, "*") {
			fc.FilterChainMatch.ServerNames = slices.Sorted(slices.Values(c.sni))
		}
		for _, d := range slices.Sorted(slices.Values(c.cidr)) {
			if r := cidrRange(d); r != nil && r.AddressPrefix != "0.0.0.0" {
				fc.FilterChainMatch.PrefixRanges = append(fc.FilterChainMatch.PrefixRanges, r)
			}
		}
		l.FilterChains = append(l.FilterChains, fc)
	}
	switch {
	case l.DefaultFilterChain != nil && len(l.FilterChains) == 0:
		l.FilterChains, l.DefaultFilterChain = []*listenerv3.FilterChain{l.DefaultFilterChain}, nil
	case l.DefaultFilterChain == nil:
		l.DefaultFilterChain = passthroughChain(o)
	}
	return l
}

// cidrRange is an address or CIDR as a prefix range, its address as
// written (not masked), as Istio converts it.
func cidrRange(s string) *core.CidrRange {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return nil
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return &core.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(p.Bits()))}
}

// egressAddress is an IP and port or, without a port, the path of a Unix
// socket (Istio takes any portless bind for a socket path).
func egressAddress(bind string, port int) *core.Address {
	if port == 0 {
		return &core.Address{Address: &core.Address_Pipe{Pipe: &core.Pipe{Path: strings.TrimPrefix(bind, UnixPrefix)}}}
	}
	return address(bind, port)
}
