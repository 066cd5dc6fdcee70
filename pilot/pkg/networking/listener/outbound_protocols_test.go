package listener_test

import (
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	mongo "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/mongo_proxy/v3"
	redis "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/redis_proxy/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func filterNames(fc *listenerv3.FilterChain) string {
	var out []string
	for _, f := range fc.Filters {
		out = append(out, strings.TrimPrefix(f.Name, "envoy.filters.network."))
	}
	return strings.Join(out, ",")
}

func lastTCPProxy(t *testing.T, fc *listenerv3.FilterChain) *tcpproxy.TcpProxy {
	t.Helper()
	tp := &tcpproxy.TcpProxy{}
	if err := fc.Filters[len(fc.Filters)-1].GetTypedConfig().UnmarshalTo(tp); err != nil {
		t.Fatalf("last filter of %s is not a tcp_proxy: %v", filterNames(fc), err)
	}
	return tp
}

// Istio's buildNetworkFiltersStack: mongo_proxy before the TCP proxy
// (on unless turned off), redis_proxy instead of it and mysql_proxy before
// it (only when turned on), each with the chain's stat prefix; the side's
// TCP stats filters go before the whole stack.
func TestProtocolFilterStacks(t *testing.T) {
	mg := svc("mongo.ns.svc.cluster.local", "10.0.0.1", &model.Port{Name: "mongo", Port: 27017, Protocol: protocol.Mongo})
	rd := svc("redis.ns.svc.cluster.local", "10.0.0.2", &model.Port{Name: "redis", Port: 6379, Protocol: protocol.Redis})
	my := svc("mysql.ns.svc.cluster.local", "10.0.0.3", &model.Port{Name: "mysql", Port: 3306, Protocol: protocol.MySQL})
	other := svc("other.ns.svc.cluster.local", "10.0.0.4", &model.Port{Name: "redis", Port: 6379, Protocol: protocol.Redis})
	services := []*model.Service{mg, rd, my, other}
	stats := []*listenerv3.Filter{{Name: "istio.stats"}}
	stacks := func(f listener.ProtocolFilters, vss ...*config.Config) map[string]*listenerv3.FilterChain {
		o := listener.Options{AllowAny: true, TCP: listener.TCPRouting{Protocols: f}, VirtualServices: vss,
			TelemetryOut: &listener.Telemetry{TCPStats: stats}}
		out := map[string]*listenerv3.FilterChain{}
		for _, l := range listener.BuildOutbound(services, o) {
			if err := l.ValidateAll(); err != nil {
				t.Errorf("%s: invalid: %v", l.Name, err)
			}
			if len(l.FilterChains) > 0 {
				out[l.Name] = l.FilterChains[0]
			}
		}
		return out
	}

	def := stacks(listener.ProtocolFilters{})
	for name, want := range map[string]string{"10.0.0.1_27017": "istio.stats,mongo_proxy,tcp_proxy", "10.0.0.2_6379": "istio.stats,tcp_proxy",
		"10.0.0.3_3306": "istio.stats,tcp_proxy"} {
		if got := filterNames(def[name]); got != want {
			t.Errorf("defaults: %s: %s, want %s", name, got, want)
		}
	}
	mp := &mongo.MongoProxy{}
	if err := def["10.0.0.1_27017"].Filters[1].GetTypedConfig().UnmarshalTo(mp); err != nil || mp.GetStatPrefix() != "outbound|27017||mongo.ns.svc.cluster.local" {
		t.Errorf("mongo_proxy %v (%v)", mp, err)
	}
	off := stacks(listener.ProtocolFilters{NoMongo: true})
	if got := filterNames(off["10.0.0.1_27017"]); got != "istio.stats,tcp_proxy" {
		t.Errorf("mongo off: %s", got)
	}

	on := stacks(listener.ProtocolFilters{Redis: true, MySQL: true})
	if got := filterNames(on["10.0.0.2_6379"]); got != "istio.stats,redis_proxy" {
		t.Errorf("redis on: %s", got)
	}
	rp := &redis.RedisProxy{}
	if err := on["10.0.0.2_6379"].Filters[1].GetTypedConfig().UnmarshalTo(rp); err != nil {
		t.Fatal(err)
	}
	if rp.GetStatPrefix() != "outbound|6379||redis.ns.svc.cluster.local" || !rp.GetLatencyInMicros() ||
		rp.GetSettings().GetOpTimeout().AsDuration() != 5*time.Second ||
		rp.GetPrefixRoutes().GetCatchAllRoute().GetCluster() != "outbound|6379||redis.ns.svc.cluster.local" {
		t.Errorf("redis_proxy %v", rp)
	}
	if got := filterNames(on["10.0.0.3_3306"]); got != "istio.stats,mysql_proxy,tcp_proxy" {
		t.Errorf("mysql on: %s", got)
	}
	// the MySQL config is contrib's MySQLProxy{stat_prefix}: the same
	// type URL and wire bytes, and JSON can render it
	my3306 := on["10.0.0.3_3306"].Filters[1].GetTypedConfig()
	if my3306.GetTypeUrl() != "type.googleapis.com/envoy.extensions.filters.network.mysql_proxy.v3.MySQLProxy" {
		t.Errorf("mysql type %s", my3306.GetTypeUrl())
	}
	const statPrefix = "outbound|3306||mysql.ns.svc.cluster.local"
	want := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), statPrefix)
	if string(my3306.GetValue()) != string(want) {
		t.Errorf("mysql bytes %x, want %x", my3306.GetValue(), want)
	}
	if js, err := protojson.Marshal(my3306); err != nil || !strings.Contains(string(js), `"statPrefix":"`+statPrefix+`"`) {
		t.Errorf("mysql JSON %s (%v)", js, err)
	}

	// weighted routes on a Redis port: the catch-all takes the first
	// cluster, as Istio names only one
	vs := tcpVS("split", []string{rd.Hostname}, &networking.TCPRoute{Route: []*networking.RouteDestination{
		dest(other.Hostname, "", 80), dest(rd.Hostname, "", 20)}})
	w := stacks(listener.ProtocolFilters{Redis: true}, vs)["10.0.0.2_6379"]
	rp = &redis.RedisProxy{}
	if err := w.Filters[len(w.Filters)-1].GetTypedConfig().UnmarshalTo(rp); err != nil {
		t.Fatal(err)
	}
	if rp.GetStatPrefix() != "split.ns" || rp.GetPrefixRoutes().GetCatchAllRoute().GetCluster() != "outbound|6379||other.ns.svc.cluster.local" {
		t.Errorf("weighted redis_proxy %v", rp)
	}
}

// tunnelingconfig.Apply: the rule's tunnel on the service's own chain and
// on weighted clusters (their subsets ignored), a subset's own tunnel for
// a route to that subset, none for a subset without one.
func TestDestinationRuleTunnel(t *testing.T) {
	const host = "proxy.ns.svc.cluster.local"
	px := svc(host, "10.0.0.9", &model.Port{Name: "tcp", Port: 3128, Protocol: protocol.TCP})
	dr := &networking.DestinationRule{
		TrafficPolicy: &networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{Protocol: "CONNECT", TargetHost: "ext.example.com", TargetPort: 443}},
		Subsets: []*networking.Subset{
			{Name: "post", TrafficPolicy: &networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{Protocol: "POST", TargetHost: "2001:db8::1", TargetPort: 8443}}},
			{Name: "plain"},
		}}
	routing := listener.TCPRouting{LookupService: func(string) *model.Service { return px },
		DestinationRule: func(string) *networking.DestinationRule { return dr }}
	tunnel := func(vss ...*config.Config) string {
		t.Helper()
		o := listener.Options{AllowAny: true, VirtualServices: vss, TCP: routing}
		l := listenerNamed(t, listener.BuildOutbound([]*model.Service{px}, o), "10.0.0.9_3128")
		tc := lastTCPProxy(t, l.FilterChains[0]).GetTunnelingConfig()
		if tc == nil {
			return "none"
		}
		if tc.GetUsePost() {
			return "POST " + tc.GetHostname()
		}
		return tc.GetHostname()
	}
	route := func(ds ...*networking.RouteDestination) *config.Config {
		return tcpVS("v", []string{host}, &networking.TCPRoute{Route: ds})
	}
	for _, tc := range []struct {
		name string
		vs   *config.Config
		want string
	}{
		{"default chain", nil, "ext.example.com:443"},
		{"route to the host", route(dest(host, "", 0)), "ext.example.com:443"},
		{"subset with a tunnel", route(dest(host, "post", 0)), "POST [2001:db8::1]:8443"},
		{"subset without one", route(dest(host, "plain", 0)), "none"},
		{"unknown subset", route(dest(host, "missing", 0)), "none"},
		{"weighted subsets", route(dest(host, "post", 50), dest(host, "plain", 50)), "ext.example.com:443"},
	} {
		var vss []*config.Config
		if tc.vs != nil {
			vss = append(vss, tc.vs)
		}
		if got := tunnel(vss...); got != tc.want {
			t.Errorf("%s: tunnel %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The proxy's IDLE_TIMEOUT: the idle timeout of outbound TCP proxies whose
// rule sets none, of the passthrough and virtualOutbound catch-all chains
// (not the loop guard), and of HTTP connection managers.
func TestProxyIdleTimeout(t *testing.T) {
	db := svc("db.ns.svc.cluster.local", "10.0.0.3", &model.Port{Name: "tcp", Port: 5432, Protocol: protocol.TCP})
	pg := svc("pg.ns.svc.cluster.local", "10.0.0.5", &model.Port{Name: "tcp", Port: 5432, Protocol: protocol.TCP})
	web := svc("web.ns.svc.cluster.local", "10.0.0.6", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP})
	own := &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{
		Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(7 * time.Second)}}}}
	routing := listener.TCPRouting{DestinationRule: func(h string) *networking.DestinationRule {
		if h == pg.Hostname {
			return own
		}
		return nil
	}}
	idleOf := func(fc *listenerv3.FilterChain) time.Duration {
		tp := lastTCPProxy(t, fc)
		if tp.GetIdleTimeout() == nil {
			return -1
		}
		return tp.GetIdleTimeout().AsDuration()
	}
	for _, idle := range []*durationpb.Duration{nil, listener.ParseIdleTimeout("90s")} {
		o := listener.Options{AllowAny: true, TCP: routing, IdleTimeout: idle}
		ls := listener.BuildOutbound([]*model.Service{db, pg, web}, o)
		want := time.Duration(-1)
		if idle != nil {
			want = 90 * time.Second
		}
		if got := idleOf(listenerNamed(t, ls, "10.0.0.3_5432").FilterChains[0]); got != want {
			t.Errorf("idle %v: db chain %v, want %v", idle, got, want)
		}
		if got := idleOf(listenerNamed(t, ls, "10.0.0.5_5432").FilterChains[0]); got != 7*time.Second {
			t.Errorf("idle %v: the rule's idle timeout wins: %v", idle, got)
		}
		vo := listenerNamed(t, ls, listener.VirtualOutbound)
		if got := idleOf(vo.FilterChains[1]); got != want {
			t.Errorf("idle %v: catch-all %v, want %v", idle, got, want)
		}
		if got := idleOf(vo.FilterChains[0]); got != -1 {
			t.Errorf("idle %v: loop guard %v, want none", idle, got)
		}
		http := listenerNamed(t, ls, "0.0.0.0_80")
		if got := idleOf(http.DefaultFilterChain); got != want {
			t.Errorf("idle %v: passthrough chain %v, want %v", idle, got, want)
		}
		m := &hcm.HttpConnectionManager{}
		if err := http.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetCommonHttpProtocolOptions(); (got == nil) != (idle == nil) || (got != nil && got.GetIdleTimeout().AsDuration() != want) {
			t.Errorf("idle %v: HCM common options %v", idle, got)
		}
	}
}

// Istio's parseDuration: empty or invalid is no timeout.
func TestParseIdleTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"": -1, "bogus": -1, "10": -1, "1m30s": 90 * time.Second, "0s": 0} {
		got := time.Duration(-1)
		if d := listener.ParseIdleTimeout(in); d != nil {
			got = d.AsDuration()
		}
		if got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}
