package listener_test

import (
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	mongo "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/mongo_proxy/v3"
	redis "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/redis_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// inboundPortChains are the chains of virtualInbound (or of the port's own
// listener) that match port, by name of their filters.
func inboundPortChains(t *testing.T, ls []*listenerv3.Listener, port uint32) []*listenerv3.FilterChain {
	t.Helper()
	var out []*listenerv3.FilterChain
	for _, l := range ls {
		if err := l.ValidateAll(); err != nil {
			t.Errorf("%s: invalid: %v", l.Name, err)
		}
		for _, fc := range l.FilterChains {
			if fc.GetFilterChainMatch().GetDestinationPort().GetValue() == port {
				out = append(out, fc)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no chain for port %d", port)
	}
	return out
}

// Istio's buildInboundNetworkFilters → buildNetworkFiltersStack: the
// inbound TCP chains of a Mongo, Redis or MySQL port (mTLS, TLS and plain
// text alike) end with the protocol's filter under the same switches as
// outbound chains, with the inbound cluster as stat prefix and, for
// Redis, as catch-all route; the side's TCP stats go before the stack.
func TestInboundProtocolStacks(t *testing.T) {
	targets := []listener.InboundTarget{
		{Port: 27017, Protocol: protocol.Mongo, ServicePort: 27017},
		{Port: 6379, Protocol: protocol.Redis, ServicePort: 6379},
		{Port: 3306, Protocol: protocol.MySQL, ServicePort: 3306},
		{Port: 5432, Protocol: protocol.TCP, ServicePort: 5432},
	}
	build := func(f listener.ProtocolFilters) []*listenerv3.Listener {
		o := listener.Options{Inbound: targets, TCP: listener.TCPRouting{Protocols: f},
			TelemetryIn: &listener.Telemetry{TCPStats: []*listenerv3.Filter{{Name: "istio.stats"}}}}
		return listener.BuildInboundListeners(o)
	}
	cases := []struct {
		name  string
		f     listener.ProtocolFilters
		stack map[uint32]string
	}{
		{"defaults", listener.ProtocolFilters{}, map[uint32]string{
			27017: "istio.metadata_exchange,istio.stats,mongo_proxy,tcp_proxy", 6379: "istio.metadata_exchange,istio.stats,tcp_proxy",
			3306: "istio.metadata_exchange,istio.stats,tcp_proxy", 5432: "istio.metadata_exchange,istio.stats,tcp_proxy"}},
		{"all on", listener.ProtocolFilters{Redis: true, MySQL: true}, map[uint32]string{
			27017: "istio.metadata_exchange,istio.stats,mongo_proxy,tcp_proxy", 6379: "istio.metadata_exchange,istio.stats,redis_proxy",
			3306: "istio.metadata_exchange,istio.stats,mysql_proxy,tcp_proxy", 5432: "istio.metadata_exchange,istio.stats,tcp_proxy"}},
		{"mongo off", listener.ProtocolFilters{NoMongo: true}, map[uint32]string{
			27017: "istio.metadata_exchange,istio.stats,tcp_proxy"}},
	}
	for _, c := range cases {
		ls := build(c.f)
		for port, want := range c.stack {
			chains := inboundPortChains(t, ls, port)
			if len(chains) != 3 {
				t.Errorf("%s: port %d: %d chains, want mTLS, TLS and plain text (PERMISSIVE)", c.name, port, len(chains))
			}
			for _, fc := range chains {
				if got := filterNames(fc); got != want {
					t.Errorf("%s: %s (%s): %s, want %s", c.name, fc.Name, fc.GetFilterChainMatch().GetTransportProtocol(), got, want)
				}
			}
		}
	}

	ls := build(listener.ProtocolFilters{Redis: true})
	fc := inboundPortChains(t, ls, 6379)[0]
	rp := &redis.RedisProxy{}
	if err := fc.Filters[len(fc.Filters)-1].GetTypedConfig().UnmarshalTo(rp); err != nil {
		t.Fatal(err)
	}
	if rp.GetStatPrefix() != "inbound|6379||" || rp.GetPrefixRoutes().GetCatchAllRoute().GetCluster() != "inbound|6379||" ||
		!rp.GetLatencyInMicros() || rp.GetSettings().GetOpTimeout().AsDuration().Seconds() != 5 {
		t.Errorf("inbound redis_proxy: %v", rp)
	}
	fc = inboundPortChains(t, ls, 27017)[0]
	mp := &mongo.MongoProxy{}
	if err := fc.Filters[len(fc.Filters)-2].GetTypedConfig().UnmarshalTo(mp); err != nil || mp.GetStatPrefix() != "inbound|27017||" {
		t.Errorf("inbound mongo_proxy: %v (%v)", mp, err)
	}
	if tp := lastTCPProxy(t, fc); tp.GetStatPrefix() != "inbound|27017||" || tp.GetCluster() != "inbound|27017||" {
		t.Errorf("inbound tcp_proxy after mongo_proxy: %v", tp)
	}

	my := inboundPortChains(t, build(listener.ProtocolFilters{MySQL: true}), 3306)[0]
	js, err := protojson.Marshal(my.Filters[len(my.Filters)-2].GetTypedConfig())
	if got := strings.ReplaceAll(string(js), " ", ""); err != nil ||
		got != `{"@type":"type.googleapis.com/envoy.extensions.filters.network.mysql_proxy.v3.MySQLProxy","statPrefix":"inbound|3306||"}` {
		t.Errorf("inbound mysql_proxy: %s (%v)", js, err)
	}
}

// A Sidecar ingress listener that terminates TLS itself keeps the filter
// of its protocol (Istio builds its chain with buildInboundNetworkFilters
// too), and a listener that binds to its port has the same stack.
func TestInboundProtocolStacksOnSidecarListeners(t *testing.T) {
	tls := &tlsv3.DownstreamTlsContext{}
	targets := []listener.InboundTarget{
		{Port: 27017, Protocol: protocol.Mongo, ServicePort: 27017, TLS: tls, Bind: "10.1.0.9",
			Config: "/apis/networking.istio.io/v1/namespaces/app/sidecar/default"},
		{Port: 6379, Protocol: protocol.Redis, ServicePort: 6379, Bind: "10.1.0.9", BindToPort: true},
	}
	ls := listener.BuildInboundListeners(listener.Options{Inbound: targets, TCP: listener.TCPRouting{Protocols: listener.ProtocolFilters{Redis: true}},
		MTLS: authn.Policy{Workload: authn.ModeDisable}})
	for port, want := range map[uint32]string{27017: "istio.metadata_exchange,mongo_proxy,tcp_proxy", 6379: "istio.metadata_exchange,redis_proxy"} {
		for _, fc := range inboundPortChains(t, ls, port) {
			if got := filterNames(fc); got != want {
				t.Errorf("%s: %s, want %s", fc.Name, got, want)
			}
		}
	}
	if l := modesListener(ls, "10.1.0.9_6379"); l == nil {
		t.Errorf("no listener of its own for the bound Redis port")
	}
}
