package listener_test

import (
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	redis "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/redis_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// gatewayChainsFixture is a gateway with Redis, MySQL, TCP and
// AUTO_PASSTHROUGH servers, the services and rules its routes resolve.
func gatewayChainsFixture(f listener.ProtocolFilters, idle *durationpb.Duration, statName string) listener.GatewayOptions {
	rd := svc("cache.ns.svc.cluster.local", "10.0.0.1", &model.Port{Name: "redis", Port: 6379, Protocol: protocol.Redis})
	my := svc("db.ns.svc.cluster.local", "10.0.0.2", &model.Port{Name: "mysql", Port: 3306, Protocol: protocol.MySQL})
	app := svc("app.ns.svc.cluster.local", "10.0.0.3", &model.Port{Name: "tcp", Port: 7000, Protocol: protocol.TCP})
	services := map[string]*model.Service{rd.Hostname: rd, my.Hostname: my, app.Hostname: app}
	srcIP := &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
		ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}}
	rules := map[string]*networking.DestinationRule{
		rd.Hostname: {Host: rd.Hostname, Subsets: []*networking.Subset{{Name: "a"}, {Name: "b"}}},
		app.Hostname: {Host: app.Hostname, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: srcIP,
			ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(time.Minute)}}}},
	}
	server := func(name string, port uint32, proto string, tls *networking.ServerTLSSettings, hosts ...string) *networking.Server {
		return &networking.Server{Port: &networking.Port{Number: port, Name: name, Protocol: proto}, Hosts: hosts, Tls: tls}
	}
	gw := config.Config{Meta: config.Meta{Namespace: "ns", Name: "edge"}, Spec: &networking.Gateway{
		Selector: map[string]string{"istio": "ingressgateway"},
		Servers: []*networking.Server{server("redis", 6379, "REDIS", nil, "*"), server("mysql", 3306, "MYSQL", nil, "*"),
			server("tcp", 9000, "TCP", nil, "*"),
			server("mesh", 15443, "TLS", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}, "*.ns.svc.cluster.local")}}}
	dest := func(host, subset string, weight int32) *networking.RouteDestination {
		return &networking.RouteDestination{Destination: &networking.Destination{Host: host, Subset: subset}, Weight: weight}
	}
	vs := config.Config{Meta: config.Meta{Namespace: "ns", Name: "edge"}, Spec: &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"edge"},
		Tcp: []*networking.TCPRoute{
			{Match: []*networking.L4MatchAttributes{{Port: 6379}}, Route: []*networking.RouteDestination{dest(rd.Hostname, "a", 50), dest(rd.Hostname, "b", 50)}},
			{Match: []*networking.L4MatchAttributes{{Port: 3306}}, Route: []*networking.RouteDestination{dest(my.Hostname, "", 0)}},
			{Match: []*networking.L4MatchAttributes{{Port: 9000}}, Route: []*networking.RouteDestination{dest(app.Hostname, "", 0)}},
		}}}
	proxy := &model.Proxy{Type: model.Router, Labels: map[string]string{"istio": "ingressgateway"}, ConfigNamespace: "ns"}
	return listener.GatewayOptions{
		Options: listener.Options{IdleTimeout: idle, TelemetryOut: &listener.Telemetry{TCPStats: []*listenerv3.Filter{{Name: "istio.stats"}}},
			TCP: listener.TCPRouting{Protocols: f, StatName: statName,
				LookupService:   func(h string) *model.Service { return services[h] },
				DestinationRule: func(h string) *networking.DestinationRule { return rules[h] }}},
		Merged:          gateway.Merge(gateway.Select([]config.Config{gw}, proxy, nil), proxy),
		VirtualServices: func(string) []config.Config { return []config.Config{vs} },
		Services:        []*model.Service{app, rd, my},
	}
}

func gatewayChainsByListener(t *testing.T, o listener.GatewayOptions) map[string][]*listenerv3.FilterChain {
	t.Helper()
	out := map[string][]*listenerv3.FilterChain{}
	for _, l := range listener.BuildGateway(o) {
		if err := l.ValidateAll(); err != nil {
			t.Errorf("%s: invalid: %v", l.Name, err)
		}
		out[l.Name] = l.FilterChains
	}
	return out
}

// Gateway TCP route and AUTO_PASSTHROUGH chains take the filters of the
// server's (for AUTO_PASSTHROUGH, the service port's) protocol behind
// Istio's flags, the TCP stats before them, as Istio's shared
// buildOutboundNetworkFilters builds them.
func TestGatewayProtocolStacks(t *testing.T) {
	def := gatewayChainsByListener(t, gatewayChainsFixture(listener.ProtocolFilters{}, nil, ""))
	on := gatewayChainsByListener(t, gatewayChainsFixture(listener.ProtocolFilters{Redis: true, MySQL: true}, nil, ""))
	for _, c := range []struct {
		listener  string
		chain     int
		def, want string
	}{
		{"0.0.0.0_6379", 0, "istio.stats,tcp_proxy", "istio.stats,redis_proxy"},
		{"0.0.0.0_3306", 0, "istio.stats,tcp_proxy", "istio.stats,mysql_proxy,tcp_proxy"},
		{"0.0.0.0_9000", 0, "istio.stats,tcp_proxy", "istio.stats,tcp_proxy"},
		// AUTO_PASSTHROUGH: app, then cache and its subsets a and b, then db
		{"0.0.0.0_15443", 0, "istio.stats,tcp_proxy", "istio.stats,tcp_proxy"},
		{"0.0.0.0_15443", 1, "istio.stats,tcp_proxy", "istio.stats,redis_proxy"},
		{"0.0.0.0_15443", 3, "istio.stats,tcp_proxy", "istio.stats,redis_proxy"},
		{"0.0.0.0_15443", 4, "istio.stats,tcp_proxy", "istio.stats,mysql_proxy,tcp_proxy"},
	} {
		for _, x := range []struct {
			chains map[string][]*listenerv3.FilterChain
			want   string
		}{{def, c.def}, {on, c.want}} {
			fcs := x.chains[c.listener]
			if len(fcs) <= c.chain {
				t.Fatalf("%s: %d chains", c.listener, len(fcs))
			}
			if got := filterNames(fcs[c.chain]); got != x.want {
				t.Errorf("%s chain %d: %s, want %s", c.listener, c.chain, got, x.want)
			}
		}
	}
	// the Redis proxy routes to the first weighted cluster (a route) or to
	// the SNI cluster (AUTO_PASSTHROUGH), with the chain's stat prefix
	for _, c := range []struct {
		listener      string
		chain         int
		stat, cluster string
	}{
		{"0.0.0.0_6379", 0, "edge.ns", "outbound|6379|a|cache.ns.svc.cluster.local"},
		{"0.0.0.0_15443", 3, "outbound_.6379_.b_.cache.ns.svc.cluster.local", "outbound_.6379_.b_.cache.ns.svc.cluster.local"},
	} {
		fc := on[c.listener][c.chain]
		rp := &redis.RedisProxy{}
		if err := fc.Filters[len(fc.Filters)-1].GetTypedConfig().UnmarshalTo(rp); err != nil {
			t.Fatal(err)
		}
		if rp.GetStatPrefix() != c.stat || rp.GetPrefixRoutes().GetCatchAllRoute().GetCluster() != c.cluster {
			t.Errorf("%s chain %d: redis_proxy %s -> %s, want %s -> %s", c.listener, c.chain, rp.GetStatPrefix(),
				rp.GetPrefixRoutes().GetCatchAllRoute().GetCluster(), c.stat, c.cluster)
		}
	}
}

// The TCP proxies of gateway chains take the rule's idle timeout, else the
// proxy's IDLE_TIMEOUT; its source-IP hashing; and the mesh's
// outboundClusterStatName, on route and AUTO_PASSTHROUGH chains alike.
func TestGatewayTCPProxySettings(t *testing.T) {
	chains := gatewayChainsByListener(t, gatewayChainsFixture(listener.ProtocolFilters{}, durationpb.New(45*time.Second), "%SERVICE%_%SERVICE_PORT%"))
	for _, c := range []struct {
		listener string
		chain    int
		stat     string
		idle     time.Duration
		hash     bool
	}{
		{"0.0.0.0_9000", 0, "app.ns.svc.cluster.local_9000", time.Minute, true},
		{"0.0.0.0_3306", 0, "db.ns.svc.cluster.local_3306", 45 * time.Second, false},
		{"0.0.0.0_6379", 0, "edge.ns", 45 * time.Second, false},
		{"0.0.0.0_15443", 0, "app.ns.svc.cluster.local_7000", time.Minute, true},
		{"0.0.0.0_15443", 2, "cache.ns.svc.cluster.local_6379", 45 * time.Second, false},
	} {
		tp := lastTCPProxy(t, chains[c.listener][c.chain])
		if tp.GetStatPrefix() != c.stat || tp.GetIdleTimeout().AsDuration() != c.idle || (len(tp.GetHashPolicy()) > 0) != c.hash {
			t.Errorf("%s chain %d: stat %s idle %v hash %v, want %s %v %v", c.listener, c.chain, tp.GetStatPrefix(),
				tp.GetIdleTimeout().AsDuration(), tp.GetHashPolicy(), c.stat, c.idle, c.hash)
		}
		if tp.GetTunnelingConfig() != nil {
			t.Errorf("%s chain %d: tunnel %v without a rule's", c.listener, c.chain, tp.GetTunnelingConfig())
		}
	}
}

// A gateway's listeners listen on its wildcards: :: for an IPv6-only one,
// 0.0.0.0 with :: as an additional address for a dual-stack one only under
// ISTIO_DUAL_STACK.
func TestGatewayWildcards(t *testing.T) {
	for _, c := range []struct {
		wildcards []string
		dualStack bool
		name      string
		extra     int
	}{
		{nil, false, "0.0.0.0_9000", 0},
		{[]string{"::"}, false, "::_9000", 0},
		{[]string{"::"}, true, "::_9000", 0},
		{[]string{"0.0.0.0", "::"}, false, "0.0.0.0_9000", 0},
		{[]string{"0.0.0.0", "::"}, true, "0.0.0.0_9000", 1},
	} {
		o := gatewayChainsFixture(listener.ProtocolFilters{}, nil, "")
		o.Wildcards, o.DualStack = c.wildcards, c.dualStack
		var got *listenerv3.Listener
		for _, l := range listener.BuildGateway(o) {
			if l.Name == c.name {
				got = l
			}
		}
		if got == nil {
			t.Fatalf("%v dual-stack %v: no listener %s", c.wildcards, c.dualStack, c.name)
		}
		primary := "0.0.0.0"
		if len(c.wildcards) > 0 {
			primary = c.wildcards[0]
		}
		addr := got.GetAddress().GetSocketAddress()
		if addr.GetAddress() != primary || addr.GetPortValue() != 9000 || len(got.AdditionalAddresses) != c.extra {
			t.Errorf("%v dual-stack %v: %s on %v, additional %v", c.wildcards, c.dualStack, got.Name, addr, got.AdditionalAddresses)
		}
		if c.extra == 1 && got.AdditionalAddresses[0].GetAddress().GetSocketAddress().GetAddress() != "::" {
			t.Errorf("dual-stack: additional %v", got.AdditionalAddresses)
		}
	}
}
