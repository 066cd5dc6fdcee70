package listener_test

import (
	"fmt"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func tcpVS(name string, hosts []string, routes ...*networking.TCPRoute) *config.Config {
	return &config.Config{Meta: config.Meta{Name: name, Namespace: "ns",
		GroupVersionKind: config.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}},
		Spec: &networking.VirtualService{Hosts: hosts, Tcp: routes}}
}

func dest(host, subset string, weight int32) *networking.RouteDestination {
	return &networking.RouteDestination{Destination: &networking.Destination{Host: host, Subset: subset}, Weight: weight}
}

// tcpChains summarises the TCP chains of a listener: "<cidrs> <target>
// [hash] [config]", the default chain last and marked "default".
func tcpChains(t *testing.T, l *listenerv3.Listener) []string {
	t.Helper()
	if err := l.ValidateAll(); err != nil {
		t.Errorf("%s: invalid: %v", l.Name, err)
	}
	one := func(fc *listenerv3.FilterChain) string {
		var cidrs []string
		for _, r := range fc.GetFilterChainMatch().GetPrefixRanges() {
			cidrs = append(cidrs, fmt.Sprintf("%s/%d", r.GetAddressPrefix(), r.GetPrefixLen().GetValue()))
		}
		s := "[" + strings.Join(cidrs, ",") + "]"
		tp := &tcpproxy.TcpProxy{}
		if err := fc.Filters[len(fc.Filters)-1].GetTypedConfig().UnmarshalTo(tp); err != nil {
			return s + " not tcp"
		}
		if w := tp.GetWeightedClusters(); w != nil {
			var ws []string
			for _, c := range w.GetClusters() {
				ws = append(ws, fmt.Sprintf("%s=%d", c.GetName(), c.GetWeight()))
			}
			s += " " + tp.GetStatPrefix() + "{" + strings.Join(ws, ",") + "}"
		} else {
			s += " " + tp.GetCluster()
		}
		if len(tp.GetHashPolicy()) > 0 {
			s += " hash"
		}
		if c := fc.GetMetadata().GetFilterMetadata()["istio"].GetFields()["config"].GetStringValue(); c != "" {
			s += " " + c[strings.LastIndex(c, "/")+1:]
		}
		return s
	}
	var out []string
	for _, fc := range l.FilterChains {
		out = append(out, one(fc))
	}
	if l.DefaultFilterChain != nil {
		out = append(out, "default "+one(l.DefaultFilterChain))
	}
	return out
}

func listenerNamed(t *testing.T, ls []*listenerv3.Listener, name string) *listenerv3.Listener {
	t.Helper()
	for _, l := range ls {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no listener %s", name)
	return nil
}

// Istio's buildSidecarOutboundTCPFilterChainOpts: the first applying
// route without subnets ends the chains; applying matches with subnets add
// chains before it; matches that do not apply (labels, namespace, port,
// gateways) are skipped.
func TestTCPRoutesMatches(t *testing.T) {
	const host = "db.ns.svc.cluster.local"
	db := svc(host, "10.0.0.3", &model.Port{Name: "tcp", Port: 5432, Protocol: protocol.TCP})
	other := svc("other.ns.svc.cluster.local", "10.0.0.4", &model.Port{Name: "a", Port: 1, Protocol: protocol.TCP},
		&model.Port{Name: "b", Port: 2, Protocol: protocol.TCP})
	lookup := map[string]*model.Service{host: db, other.Hostname: other}
	hashing := &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
		LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
			HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}}}}
	routing := listener.TCPRouting{Labels: map[string]string{"app": "client"}, Namespace: "ns",
		LookupService: func(h string) *model.Service { return lookup[h] },
		DestinationRule: func(h string) *networking.DestinationRule {
			if h == other.Hostname {
				return hashing
			}
			return nil
		}}
	match := func(m *networking.L4MatchAttributes) []*networking.L4MatchAttributes {
		return []*networking.L4MatchAttributes{m}
	}
	cases := []struct {
		name string
		vss  []*config.Config
		want []string
	}{
		{name: "no virtual service", want: []string{"[] outbound|5432||db.ns.svc.cluster.local"}},
		{
			name: "matches that do not apply",
			vss: []*config.Config{tcpVS("a", []string{host},
				&networking.TCPRoute{Match: match(&networking.L4MatchAttributes{SourceLabels: map[string]string{"app": "x"}}), Route: []*networking.RouteDestination{dest(other.Hostname, "", 0)}},
				&networking.TCPRoute{Match: match(&networking.L4MatchAttributes{SourceNamespace: "elsewhere"}), Route: []*networking.RouteDestination{dest(other.Hostname, "", 0)}},
				&networking.TCPRoute{Match: match(&networking.L4MatchAttributes{Port: 9999}), Route: []*networking.RouteDestination{dest(other.Hostname, "", 0)}},
				&networking.TCPRoute{Match: match(&networking.L4MatchAttributes{Gateways: []string{"ns/gw"}}), Route: []*networking.RouteDestination{dest(other.Hostname, "", 0)}},
				&networking.TCPRoute{}, // no destinations
			)},
			want: []string{"[] outbound|5432||db.ns.svc.cluster.local"},
		},
		{
			// the service has two ports, so the listener's port names the
			// cluster; the rule of the destination's host hashes
			name: "subnets then a terminal match, later ones ignored",
			vss: []*config.Config{tcpVS("a", []string{"*.ns.svc.cluster.local"},
				&networking.TCPRoute{Match: []*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.9.0.0/16"}}, {DestinationSubnets: []string{"10.8.0.1"}, SourceLabels: map[string]string{"app": "x"}}},
					Route: []*networking.RouteDestination{dest(other.Hostname, "", 0)}},
				&networking.TCPRoute{Match: match(&networking.L4MatchAttributes{Gateways: []string{"mesh"}, Port: 5432, SourceNamespace: "ns"}),
					Route: []*networking.RouteDestination{dest(host, "v1", 0)}},
				&networking.TCPRoute{Route: []*networking.RouteDestination{dest(other.Hostname, "", 0)}},
			), tcpVS("b", []string{host}, &networking.TCPRoute{Route: []*networking.RouteDestination{dest(other.Hostname, "", 0)}})},
			want: []string{"[10.9.0.0/16] outbound|5432||other.ns.svc.cluster.local hash", "default [] outbound|5432|v1|db.ns.svc.cluster.local a"},
		},
		{
			name: "weighted, zero weights left out, first virtual service with tcp routes wins",
			vss: []*config.Config{tcpVS("http-only", []string{host}), tcpVS("c", []string{host},
				&networking.TCPRoute{Route: []*networking.RouteDestination{dest(other.Hostname, "", 70), dest(host, "v2", 30), dest(host, "v3", 0)}})},
			want: []string{"[] c.ns{outbound|5432||other.ns.svc.cluster.local=70,outbound|5432|v2|db.ns.svc.cluster.local=30} hash c"},
		},
		{
			name: "a virtual service of another host",
			vss:  []*config.Config{tcpVS("d", []string{"*.example.com"}, &networking.TCPRoute{Route: []*networking.RouteDestination{dest(other.Hostname, "", 0)}})},
			want: []string{"[] outbound|5432||db.ns.svc.cluster.local"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := listener.Options{AllowAny: true, VirtualServices: tc.vss, TCP: routing}
			got := tcpChains(t, listenerNamed(t, listener.BuildOutbound([]*model.Service{db}, o), "10.0.0.3_5432"))
			sameLines(t, "chains", got, tc.want)
		})
	}
}

// A service whose address is a CIDR listens on the wildcard with a CIDR
// match; a tcp route for exactly that CIDR replaces its default chain
// (Istio's identical-match guard), and the passthrough takes the rest.
func TestTCPRoutesOnCIDRService(t *testing.T) {
	const host = "net.ns.svc.cluster.local"
	net := svc(host, "10.20.0.0/16", &model.Port{Name: "tcp", Port: 7000, Protocol: protocol.TCP})
	vs := tcpVS("net", []string{host}, &networking.TCPRoute{
		Match: []*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.20.0.0/16"}}},
		Route: []*networking.RouteDestination{dest("x.ns.svc.cluster.local", "", 0)}})
	o := listener.Options{AllowAny: true, VirtualServices: []*config.Config{vs}}
	got := tcpChains(t, listenerNamed(t, listener.BuildOutbound([]*model.Service{net}, o), "0.0.0.0_7000"))
	want := []string{"[10.20.0.0/16] outbound|7000||x.ns.svc.cluster.local", "default [] PassthroughCluster"}
	sameLines(t, "chains", got, want)
}

// With Sidecar egress listeners, each listener's own VirtualServices apply
// to its services; TLS ports keep their cluster (tcp routes are not theirs).
func TestTCPRoutesPerEgressListener(t *testing.T) {
	db := svc("db.ns.svc.cluster.local", "10.0.0.3", &model.Port{Name: "tcp", Port: 5432, Protocol: protocol.TCP})
	ext := svc("ext.example.com", "", &model.Port{Name: "tls", Port: 443, Protocol: protocol.TLS})
	vs := tcpVS("all", []string{"*"}, &networking.TCPRoute{Route: []*networking.RouteDestination{dest("x.ns.svc.cluster.local", "", 0)}})
	o := listener.Options{AllowAny: true, Egress: []listener.EgressListener{
		{Port: 5432, HasPort: true, Protocol: protocol.TCP, Services: []*model.Service{db}, VirtualServices: []*config.Config{vs}},
		{Services: []*model.Service{db, ext}},
	}}
	ls := listener.BuildOutbound(nil, o)
	if got, want := tcpChains(t, listenerNamed(t, ls, "10.0.0.3_5432")), "[] outbound|5432||x.ns.svc.cluster.local all"; strings.Join(got, "\n") != want {
		t.Errorf("port listener: %v, want %s", got, want)
	}
	o.Egress[0].Port = 5433
	o.Egress[1].VirtualServices = []*config.Config{vs}
	ls = listener.BuildOutbound(nil, o)
	// an unknown destination takes the listener's port, as in Istio
	if got, want := tcpChains(t, listenerNamed(t, ls, "10.0.0.3_5433")), "[] outbound|5433||x.ns.svc.cluster.local all"; strings.Join(got, "\n") != want {
		t.Errorf("port listener: %v, want %s", got, want)
	}
	if got, want := tcpChains(t, listenerNamed(t, ls, "10.0.0.3_5432")), "[] outbound|5432||x.ns.svc.cluster.local all"; strings.Join(got, "\n") != want {
		t.Errorf("catch-all listener: %v, want %s", got, want)
	}
	got := tcpChains(t, listenerNamed(t, ls, "0.0.0.0_443"))
	if len(got) != 2 || got[0] != "[] outbound|443||ext.example.com" {
		t.Errorf("TLS listener: %v, want the service's own cluster by SNI", got)
	}
}

// maybeSetHashPolicy: a subset's own load balancer decides, any policy but
// a source-IP hash turning the rule's off.
func TestTCPSourceIPHashBySubset(t *testing.T) {
	const host = "db.ns.svc.cluster.local"
	db := svc(host, "10.0.0.3", &model.Port{Name: "tcp", Port: 5432, Protocol: protocol.TCP})
	srcIP := &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
		HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}}
	header := &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
		HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x"}}}}
	dr := &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: srcIP}, Subsets: []*networking.Subset{
		{Name: "plain"},
		{Name: "header", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: header}},
		{Name: "rr", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
			LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}}}},
		{Name: "own", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: srcIP}},
		{Name: "tls-only", TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{}}},
	}}
	routing := listener.TCPRouting{LookupService: func(string) *model.Service { return db },
		DestinationRule: func(string) *networking.DestinationRule { return dr }}
	for subset, hash := range map[string]bool{"": true, "plain": true, "header": false, "rr": false, "own": true, "tls-only": true, "missing": true} {
		vs := tcpVS("v", []string{host}, &networking.TCPRoute{Route: []*networking.RouteDestination{dest(host, subset, 0)}})
		o := listener.Options{AllowAny: true, VirtualServices: []*config.Config{vs}, TCP: routing}
		got := tcpChains(t, listenerNamed(t, listener.BuildOutbound([]*model.Service{db}, o), "10.0.0.3_5432"))
		if len(got) != 1 || strings.HasSuffix(strings.TrimSuffix(got[0], " v"), " hash") != hash {
			t.Errorf("subset %q: %v, want hash=%v", subset, got, hash)
		}
	}
	// without a rule of its own, a subset-less rule on the top level hashes
	// the default chain too
	o := listener.Options{AllowAny: true, TCP: routing}
	if got := tcpChains(t, listenerNamed(t, listener.BuildOutbound([]*model.Service{db}, o), "10.0.0.3_5432")); len(got) != 1 || got[0] != "[] outbound|5432||db.ns.svc.cluster.local hash" {
		t.Errorf("default chain: %v, want source-IP hash", got)
	}
}

// The mesh's outboundClusterStatName names the stat prefix of chains to one
// cluster (Istio's BuildStatPrefix): a Kubernetes service by name and
// namespace, the listener's port and its name on routed chains, only the
// port number on the default chain; weighted chains keep the
// VirtualService's name, unknown destinations the cluster's.
func TestTCPStatName(t *testing.T) {
	const host = "db.ns.svc.cluster.local"
	db := &model.Service{Hostname: host, DefaultAddress: "10.0.0.3", Ports: []*model.Port{{Name: "tcp-db", Port: 5432, Protocol: protocol.TCP}},
		Attributes: model.ServiceAttributes{ServiceRegistry: model.Kubernetes, Name: "db", Namespace: "ns"}}
	ext := svc("ext.example.com", "10.0.0.4", &model.Port{Name: "tcp-ext", Port: 5432, Protocol: protocol.TCP})
	lookup := map[string]*model.Service{host: db, ext.Hostname: ext}
	const pattern = "%SERVICE%|%SERVICE_NAME%|%SERVICE_FQDN%|%SUBSET_NAME%|%SERVICE_PORT%|%SERVICE_PORT_NAME%|%TARGET_PORT%"
	routing := listener.TCPRouting{StatName: pattern, LookupService: func(h string) *model.Service { return lookup[h] }}
	stat := func(vss ...*config.Config) string {
		t.Helper()
		o := listener.Options{AllowAny: true, VirtualServices: vss, TCP: routing}
		l := listenerNamed(t, listener.BuildOutbound([]*model.Service{db, ext}, o), "10.0.0.3_5432")
		tp := &tcpproxy.TcpProxy{}
		if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
			t.Fatal(err)
		}
		return tp.GetStatPrefix()
	}
	route := func(ds ...*networking.RouteDestination) *config.Config {
		return tcpVS("v", []string{host}, &networking.TCPRoute{Route: ds})
	}
	for _, tc := range []struct {
		name string
		vs   *config.Config
		want string
	}{
		{"default chain", nil, "db.ns|db|db.ns.svc.cluster.local||5432||0"},
		{"subset", route(dest(host, "v1", 0)), "db.ns|db|db.ns.svc.cluster.local|v1|5432|tcp-db|0"},
		{"not kubernetes", route(dest(ext.Hostname, "", 0)), "ext.example.com|ext.example.com|ext.example.com||5432|tcp-db|0"},
		{"unknown destination", route(dest("x.example.com", "", 0)), "outbound|5432||x.example.com"},
		{"weighted", route(dest(host, "", 50), dest(ext.Hostname, "", 50)), "v.ns"},
	} {
		vss := []*config.Config{}
		if tc.vs != nil {
			vss = append(vss, tc.vs)
		}
		if got := stat(vss...); got != tc.want {
			t.Errorf("%s: stat prefix %q, want %q", tc.name, got, tc.want)
		}
	}
}
