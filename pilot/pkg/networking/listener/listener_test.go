package listener_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// sidecarListeners is every listener of a sidecar, sorted by name, as the
// generator sends them.
func sidecarListeners(services []*model.Service, o listener.Options) []*listenerv3.Listener {
	out := append(listener.BuildOutbound(services, o), listener.BuildInbound(o))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func svc(host, vip string, ports ...*model.Port) *model.Service {
	return &model.Service{Hostname: host, DefaultAddress: vip, Ports: ports, Attributes: model.ServiceAttributes{Name: host, Namespace: "ns"}}
}

func TestSidecarListeners(t *testing.T) {
	services := []*model.Service{
		svc("reviews.bookinfo.svc.cluster.local", "10.96.10.12", &model.Port{Name: "http", Port: 9080, Protocol: protocol.HTTP}),
		svc("details.bookinfo.svc.cluster.local", "10.96.10.11", &model.Port{Name: "http", Port: 9080, Protocol: protocol.HTTP}),
		svc("ratings.bookinfo.svc.cluster.local", "10.96.10.13", &model.Port{Name: "grpc", Port: 9090, Protocol: protocol.GRPC},
			&model.Port{Name: "tcp-metrics", Port: 9102, Protocol: protocol.TCP}),
		svc("dns.kube-system.svc.cluster.local", "10.96.0.10", &model.Port{Name: "dns", Port: 53, Protocol: protocol.UDP}),
	}
	self := svc("productpage.bookinfo.svc.cluster.local", "10.96.10.10", &model.Port{Name: "http", Port: 9080, Protocol: protocol.HTTP})
	ls := sidecarListeners(services, listener.Options{AllowAny: true, Inbound: []listener.InboundTarget{
		{Port: 9080, Protocol: protocol.HTTP, ServicePort: 9080, Services: []*model.Service{self}}}})
	var names []string
	for _, l := range ls {
		if err := l.ValidateAll(); err != nil {
			t.Errorf("%s: invalid: %v", l.Name, err)
		}
		names = append(names, l.Name)
	}
	want := []string{"0.0.0.0_9080", "0.0.0.0_9090", "10.96.10.13_9102", "virtualInbound", "virtualOutbound"}
	if len(names) != len(want) {
		t.Fatalf("listeners %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("listener %d = %s, want %s", i, names[i], want[i])
		}
	}
	m := &hcm.HttpConnectionManager{}
	if err := ls[0].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil || m.GetRds().GetRouteConfigName() != "9080" {
		t.Errorf("HTTP listener RDS: %v %v", m.GetRds(), err)
	}
	tp := &tcpproxy.TcpProxy{}
	if err := ls[2].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetCluster() != "outbound|9102||ratings.bookinfo.svc.cluster.local" {
		t.Errorf("TCP listener cluster %v %v", tp.GetCluster(), err)
	}
	if err := ls[4].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetCluster() != "BlackHoleCluster" ||
		ls[4].FilterChains[0].FilterChainMatch.GetDestinationPort().GetValue() != 15001 {
		t.Errorf("virtualOutbound loop guard %v", tp.GetCluster())
	}
	if err := ls[4].FilterChains[1].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetCluster() != "PassthroughCluster" {
		t.Errorf("ALLOW_ANY fallback %v", tp.GetCluster())
	}
	blocked := sidecarListeners(nil, listener.Options{})
	if err := blocked[1].FilterChains[1].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetCluster() != "BlackHoleCluster" {
		t.Errorf("REGISTRY_ONLY fallback %v (%s)", tp.GetCluster(), blocked[1].Name)
	}
}

// chainSummary is "name match -> clusters" per chain, for compact checks.
func chainSummary(t *testing.T, l *listenerv3.Listener) []string {
	t.Helper()
	var out []string
	for _, fc := range l.FilterChains {
		m := fc.GetFilterChainMatch()
		s := fmt.Sprintf("%s port=%d %s %v tls=%v ->", fc.Name, m.GetDestinationPort().GetValue(), m.GetTransportProtocol(), m.GetApplicationProtocols(), fc.TransportSocket != nil)
		for _, f := range fc.Filters {
			switch f.Name {
			case "envoy.filters.network.tcp_proxy":
				tp := &tcpproxy.TcpProxy{}
				_ = f.GetTypedConfig().UnmarshalTo(tp)
				s += " tcp:" + tp.GetCluster()
			case "envoy.filters.network.http_connection_manager":
				m := &hcm.HttpConnectionManager{}
				_ = f.GetTypedConfig().UnmarshalTo(m)
				s += " http:" + m.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetCluster()
			default:
				s += " " + f.Name
			}
		}
		out = append(out, s)
	}
	return out
}

// Inbound chains follow the declared protocol of each port: HTTP ports get
// an HTTP connection manager in mTLS and plain text, TCP ports a TCP proxy
// in mTLS, client TLS and plain text, and a port services disagree on gets
// both, told apart by the inspectors (PERMISSIVE, the default).
func TestInboundChainsPerProtocol(t *testing.T) {
	self := svc("app.ns.svc.cluster.local", "10.0.0.5", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP})
	ls := sidecarListeners(nil, listener.Options{Inbound: []listener.InboundTarget{
		{Port: 8080, Protocol: protocol.HTTP, ServicePort: 80, Services: []*model.Service{self}},
		{Port: 5432, Protocol: protocol.TCP, ServicePort: 5432, Services: []*model.Service{self}},
		{Port: 9000, Protocol: protocol.Unsupported, ServicePort: 9000, Services: []*model.Service{self}},
	}})
	in := ls[0]
	if in.Name != "virtualInbound" {
		t.Fatalf("first listener %s", in.Name)
	}
	if err := in.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	uniqueMatches(t, in)
	got := chainSummary(t, in)
	want := []string{
		"virtualInbound-blackhole port=15006  [] tls=false -> istio.metadata_exchange tcp:BlackHoleCluster",
		"virtualInbound-catchall-http port=0 tls [istio-http/1.0 istio-http/1.1 istio-h2] tls=true -> istio.metadata_exchange http:InboundPassthroughCluster",
		"virtualInbound-catchall-http port=0 raw_buffer [http/1.1 h2c] tls=false -> istio.metadata_exchange http:InboundPassthroughCluster",
		"virtualInbound port=0 tls [istio-peer-exchange istio] tls=true -> istio.metadata_exchange tcp:InboundPassthroughCluster",
		"virtualInbound port=0 raw_buffer [] tls=false -> istio.metadata_exchange tcp:InboundPassthroughCluster",
		"virtualInbound port=0 tls [] tls=false -> istio.metadata_exchange tcp:InboundPassthroughCluster",
		// a declared TCP port, as Istio builds ratings' 9102 in
		// ../shared/reference/policy: every Istio ALPN, then TLS passed
		// through, then plain text
		"0.0.0.0_5432 port=5432 tls [istio istio-peer-exchange istio-http/1.0 istio-http/1.1 istio-h2] tls=true -> istio.metadata_exchange tcp:inbound|5432||",
		"0.0.0.0_5432 port=5432 tls [] tls=false -> istio.metadata_exchange tcp:inbound|5432||",
		"0.0.0.0_5432 port=5432 raw_buffer [] tls=false -> istio.metadata_exchange tcp:inbound|5432||",
		"0.0.0.0_8080 port=8080 tls [istio istio-peer-exchange istio-http/1.0 istio-http/1.1 istio-h2] tls=true -> istio.metadata_exchange http:inbound|8080||",
		"0.0.0.0_8080 port=8080 raw_buffer [] tls=false -> istio.metadata_exchange http:inbound|8080||",
		"0.0.0.0_9000 port=9000 tls [istio-http/1.0 istio-http/1.1 istio-h2] tls=true -> istio.metadata_exchange http:inbound|9000||",
		"0.0.0.0_9000 port=9000 raw_buffer [http/1.1 h2c] tls=false -> istio.metadata_exchange http:inbound|9000||",
		"0.0.0.0_9000 port=9000 tls [istio-peer-exchange istio] tls=true -> istio.metadata_exchange tcp:inbound|9000||",
		"0.0.0.0_9000 port=9000 raw_buffer [] tls=false -> istio.metadata_exchange tcp:inbound|9000||",
		"0.0.0.0_9000 port=9000 tls [] tls=false -> istio.metadata_exchange tcp:inbound|9000||",
	}
	sameLines(t, "chains", got, want)
	// the HTTP inspector is off where the protocol is declared, and on the
	// loop guard port
	var disabled []int32
	for _, r := range in.ListenerFilters[2].GetFilterDisabled().GetOrMatch().GetRules() {
		disabled = append(disabled, r.GetDestinationPortRange().GetStart())
	}
	if fmt.Sprint(disabled) != "[5432 8080 15006]" {
		t.Errorf("http_inspector disabled on %v", disabled)
	}
	// the decorator names the service and its port, not the target port
	m := &hcm.HttpConnectionManager{}
	_ = in.FilterChains[10].Filters[1].GetTypedConfig().UnmarshalTo(m)
	if op := m.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()[0].GetDecorator().GetOperation(); op != "app.ns.svc.cluster.local:80/*" {
		t.Errorf("decorator %q", op)
	}
}

// TLS services without a VIP share the wildcard listener of their port,
// each chain matching its host by SNI; a TLS service with a VIP keeps its
// own listener.
func TestTLSServicesBySNI(t *testing.T) {
	tls := &model.Port{Name: "tls", Port: 443, Protocol: protocol.TLS}
	ls := sidecarListeners([]*model.Service{
		svc("b.example.com", "", tls), svc("a.example.com", "", tls), svc("api.ns.svc.cluster.local", "10.0.0.9", &model.Port{Name: "https", Port: 443, Protocol: protocol.HTTPS}),
	}, listener.Options{AllowAny: true})
	if ls[0].Name != "0.0.0.0_443" || ls[1].Name != "10.0.0.9_443" {
		t.Fatalf("listeners %s %s", ls[0].Name, ls[1].Name)
	}
	got := chainSummary(t, ls[0])
	// chains follow the order of the services (creation time, then
	// host), as Istio merges them
	if len(got) != 2 || ls[0].FilterChains[0].FilterChainMatch.ServerNames[0] != "b.example.com" || !strings.HasSuffix(got[1], "tcp:outbound|443||a.example.com") {
		t.Errorf("SNI chains %v", got)
	}
	if ls[0].ListenerFilters[0].Name != "envoy.filters.listener.tls_inspector" || ls[0].DefaultFilterChain.GetName() != "PassthroughFilterChain" {
		t.Errorf("SNI listener filters %v default %v", ls[0].ListenerFilters, ls[0].DefaultFilterChain.GetName())
	}
	if len(ls[1].ListenerFilters) != 0 || ls[1].FilterChains[0].FilterChainMatch != nil {
		t.Errorf("VIP listener sniffs: %v", ls[1])
	}
	for _, l := range ls {
		if err := l.ValidateAll(); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
	}
}

func TestAccessLogFromMesh(t *testing.T) {
	svc := svc("a.ns.svc.cluster.local", "10.0.0.1", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP})
	ls := sidecarListeners([]*model.Service{svc}, listener.Options{AccessLogFile: "/dev/stdout"})
	m := &hcm.HttpConnectionManager{}
	if err := ls[0].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	if len(m.AccessLog) != 1 || m.AccessLog[0].Name != "envoy.access_loggers.file" {
		t.Fatalf("access log %v", m.AccessLog)
	}
	if err := ls[0].ValidateAll(); err != nil {
		t.Fatal(err)
	}
	none := sidecarListeners([]*model.Service{svc}, listener.Options{})
	_ = none[0].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m)
	if len(m.AccessLog) != 0 {
		t.Error("access log without accessLogFile")
	}
}

// uniqueMatches fails when two chains of a listener have the same match,
// which Envoy rejects.
func uniqueMatches(t *testing.T, l *listenerv3.Listener) {
	t.Helper()
	seen := map[string]string{}
	for _, fc := range l.FilterChains {
		k := fc.GetFilterChainMatch().String()
		if prev, ok := seen[k]; ok {
			t.Errorf("%s: chains %q and %q both match %s", l.Name, prev, fc.Name, k)
		}
		seen[k] = fc.Name
	}
}

// A service port whose protocol is not declared (sniffed) gets a listener
// of its own on the service's VIP, as Istio's ListenerProtocolAuto does:
// the HTTP inspector sends HTTP to the service's own routes
// ("<host>:<port>") and anything else to its cluster, the default chain.
// Without a VIP the port takes the wildcard, where an HTTP service that
// came first keeps it (Istio leaves a sniffed port over a sniffed wildcard
// alone); a CIDR address takes the wildcard too, its TCP chain matching
// the CIDR and HTTP going to the port's routes.
func TestSniffedPortTakesTCPToo(t *testing.T) {
	sniffed := func(port int) *model.Port {
		return &model.Port{Name: "data", Port: port, Protocol: protocol.Unsupported}
	}
	ls := listener.BuildOutbound([]*model.Service{
		svc("web.ns.svc.cluster.local", "10.0.0.1", &model.Port{Name: "http", Port: 8080, Protocol: protocol.HTTP}),
		svc("db.ns.svc.cluster.local", "10.0.0.2", sniffed(8080)),
		svc("headless.ns.svc.cluster.local", "", sniffed(8080)),
		svc("nets.example.com", "192.168.0.0/16", sniffed(9000)),
	}, listener.Options{AllowAny: true})
	want := map[string][]string{
		"0.0.0.0_8080": {"[http/1.1 h2c] -> rds:8080", "default: [] -> tcp:PassthroughCluster"},
		"10.0.0.2_8080": {"[http/1.1 h2c] -> rds:db.ns.svc.cluster.local:8080",
			"default: [] -> tcp:outbound|8080||db.ns.svc.cluster.local"},
		"0.0.0.0_9000": {"[] 192.168.0.0/16 -> tcp:outbound|9000||nets.example.com", "[http/1.1 h2c] -> rds:9000",
			"default: [] -> tcp:PassthroughCluster"},
		"virtualOutbound": nil,
	}
	if len(ls) != len(want) {
		t.Fatalf("%d listeners, want %d: %v", len(ls), len(want), ls)
	}
	for _, l := range ls {
		w, ok := want[l.Name]
		if !ok {
			t.Errorf("unexpected listener %s", l.Name)
			continue
		}
		if err := l.ValidateAll(); err != nil {
			t.Fatal(err)
		}
		if w == nil {
			continue
		}
		uniqueMatches(t, l)
		if len(l.ListenerFilters) != 1 || l.ListenerFilters[0].Name != "envoy.filters.listener.http_inspector" || l.BindToPort.GetValue() {
			t.Errorf("%s: listener filters %v, bind_to_port %v", l.Name, l.ListenerFilters, l.BindToPort)
		}
		got := make([]string, 0, len(w))
		for _, fc := range l.FilterChains {
			got = append(got, sniffedChain(fc))
		}
		got = append(got, "default: "+sniffedChain(l.DefaultFilterChain))
		sameLines(t, l.Name+" chains", got, w)
	}
}

// On the wildcard the first service of a port decides: a sniffed port
// without a VIP first keeps the port from a later HTTP one (HTTP over
// sniffed adds nothing, its routes come through RDS), and a later TCP port
// adds its chain only where no chain matches the same connections (TCP
// over sniffed). The mesh's protocol detection timeout goes to listeners
// with the HTTP inspector only.
func TestSniffedWildcardConflicts(t *testing.T) {
	sniffed := &model.Port{Name: "data", Port: 7000, Protocol: protocol.Unsupported}
	ls := listener.BuildOutbound([]*model.Service{
		svc("a-peers.ns.svc.cluster.local", "", sniffed),
		svc("b-http.ns.svc.cluster.local", "", &model.Port{Name: "http", Port: 7000, Protocol: protocol.HTTP}),
		svc("c-nets.example.com", "10.8.0.0/16", &model.Port{Name: "tcp", Port: 7000, Protocol: protocol.TCP}),
		svc("d-tcp.example.com", "", &model.Port{Name: "tcp", Port: 7000, Protocol: protocol.TCP}),
		svc("e-db.ns.svc.cluster.local", "10.0.0.5", &model.Port{Name: "tcp", Port: 5432, Protocol: protocol.TCP}),
	}, listener.Options{AllowAny: true, ProtocolDetectionTimeout: durationpb.New(3 * time.Second)})
	if len(ls) != 3 || ls[0].Name != "0.0.0.0_7000" || ls[1].Name != "10.0.0.5_5432" {
		t.Fatalf("listeners %v", ls)
	}
	l := ls[0]
	if err := l.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	uniqueMatches(t, l)
	var got []string
	for _, fc := range l.FilterChains {
		got = append(got, sniffedChain(fc))
	}
	got = append(got, "default: "+sniffedChain(l.DefaultFilterChain))
	want := []string{"[http/1.1 h2c] -> rds:7000", "[] 10.8.0.0/16 -> tcp:outbound|7000||c-nets.example.com",
		"default: [] -> tcp:outbound|7000||a-peers.ns.svc.cluster.local"}
	sameLines(t, "chains", got, want)
	if l.ListenerFiltersTimeout.AsDuration() != 3*time.Second || ls[1].ListenerFiltersTimeout.AsDuration() != 0 {
		t.Errorf("listener filter timeouts %v %v", l.ListenerFiltersTimeout, ls[1].ListenerFiltersTimeout)
	}
}

// sniffedChain sums up a chain: its ALPN and address match, and where it
// sends traffic.
func sniffedChain(fc *listenerv3.FilterChain) string {
	m := fc.FilterChainMatch
	s := fmt.Sprint(m.GetApplicationProtocols())
	for _, r := range m.GetPrefixRanges() {
		s += " " + r.AddressPrefix + "/" + fmt.Sprint(r.PrefixLen.GetValue())
	}
	switch f := fc.Filters[len(fc.Filters)-1]; f.Name {
	case "envoy.filters.network.tcp_proxy":
		tp := &tcpproxy.TcpProxy{}
		_ = f.GetTypedConfig().UnmarshalTo(tp)
		s += " -> tcp:" + tp.GetCluster()
	default:
		m := &hcm.HttpConnectionManager{}
		_ = f.GetTypedConfig().UnmarshalTo(m)
		s += " -> rds:" + m.GetRds().GetRouteConfigName()
	}
	return s
}

// The PeerAuthentication mode decides a port's chains: STRICT keeps only
// mTLS, DISABLE only plain text, and a port-level mode changes only that
// port (the passthrough follows the workload's mode).
func TestInboundChainsFollowMTLSMode(t *testing.T) {
	self := svc("app.ns.svc.cluster.local", "10.0.0.5", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP})
	ls := sidecarListeners(nil, listener.Options{
		MTLS: authn.Policy{Workload: authn.ModeStrict, Ports: map[uint32]authn.Mode{5432: authn.ModeDisable}},
		Inbound: []listener.InboundTarget{
			{Port: 8080, Protocol: protocol.HTTP, ServicePort: 80, Services: []*model.Service{self}},
			{Port: 5432, Protocol: protocol.TCP, ServicePort: 5432, Services: []*model.Service{self}},
		}})
	in := ls[0]
	if err := in.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	uniqueMatches(t, in)
	want := []string{
		"virtualInbound-blackhole port=15006  [] tls=false -> istio.metadata_exchange tcp:BlackHoleCluster",
		"virtualInbound-catchall-http port=0 tls [istio-http/1.0 istio-http/1.1 istio-h2] tls=true -> istio.metadata_exchange http:InboundPassthroughCluster",
		"virtualInbound port=0 tls [] tls=true -> istio.metadata_exchange tcp:InboundPassthroughCluster",
		"0.0.0.0_5432 port=5432 raw_buffer [] tls=false -> istio.metadata_exchange tcp:inbound|5432||",
		"0.0.0.0_8080 port=8080 tls [] tls=true -> istio.metadata_exchange http:inbound|8080||",
	}
	sameLines(t, "chains", chainSummary(t, in), want)
}

// sameLines fails the test when got and want differ, showing both one
// entry a line under what.
func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
