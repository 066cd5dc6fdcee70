package listener_test

import (
	"fmt"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func tlsVS(name string, hosts []string, routes ...*networking.TLSRoute) *config.Config {
	return &config.Config{Meta: config.Meta{Name: name, Namespace: "ns",
		GroupVersionKind: config.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}},
		Spec: &networking.VirtualService{Hosts: hosts, Tls: routes}}
}

// tlsChains summarises a listener: its listener filters, then per chain
// "sni=<names> cidr=<ranges> <target> [config]", the default chain last.
func tlsChains(t *testing.T, l *listenerv3.Listener) []string {
	t.Helper()
	if err := l.ValidateAll(); err != nil {
		t.Errorf("%s: invalid: %v", l.Name, err)
	}
	one := func(fc *listenerv3.FilterChain) string {
		var cidrs []string
		for _, r := range fc.GetFilterChainMatch().GetPrefixRanges() {
			cidrs = append(cidrs, fmt.Sprintf("%s/%d", r.GetAddressPrefix(), r.GetPrefixLen().GetValue()))
		}
		s := fmt.Sprintf("sni=%v cidr=%v", fc.GetFilterChainMatch().GetServerNames(), cidrs)
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
		if c := fc.GetMetadata().GetFilterMetadata()["istio"].GetFields()["config"].GetStringValue(); c != "" {
			s += " " + c[strings.LastIndex(c, "/")+1:]
		}
		return s
	}
	var filters []string
	for _, f := range l.ListenerFilters {
		filters = append(filters, strings.TrimPrefix(f.Name, "envoy.filters.listener."))
	}
	out := []string{fmt.Sprintf("filters=%v", filters)}
	for _, fc := range l.FilterChains {
		out = append(out, one(fc))
	}
	if l.DefaultFilterChain != nil {
		out = append(out, "default "+one(l.DefaultFilterChain))
	}
	return out
}

// Istio's buildSidecarOutboundTLSFilterChainOpts: every applying match of
// a tls route is a chain by its sniHosts (sorted), named after the
// VirtualService; matches whose sniHosts and subnets were already handled
// are dropped; destinationSubnets replace the CIDRs for the matches that
// follow too; the service's own chain is left out once a match applies.
func TestTLSRoutesMatches(t *testing.T) {
	const host = "ext.example.com"
	ext := svc(host, "", &model.Port{Name: "tls", Port: 443, Protocol: protocol.TLS})
	other := svc("other.ns.svc.cluster.local", "10.0.0.4", &model.Port{Name: "tls", Port: 8443, Protocol: protocol.TLS})
	lookup := map[string]*model.Service{host: ext, other.Hostname: other}
	routing := listener.TCPRouting{Labels: map[string]string{"app": "client"}, Namespace: "ns",
		LookupService: func(h string) *model.Service { return lookup[h] }}
	to := func(ds ...*networking.RouteDestination) []*networking.RouteDestination { return ds }
	cases := []struct {
		name string
		vss  []*config.Config
		want []string
	}{
		{name: "no virtual service", want: []string{"filters=[tls_inspector]", "sni=[ext.example.com] cidr=[] outbound|443||ext.example.com",
			"default sni=[] cidr=[] PassthroughCluster"}},
		{
			name: "no match applies",
			vss: []*config.Config{tlsVS("a", []string{host},
				&networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{host}, SourceLabels: map[string]string{"app": "x"}},
					{SniHosts: []string{host}, Port: 9443}, {SniHosts: []string{host}, Gateways: []string{"ns/gw"}}, {SniHosts: []string{host}, SourceNamespace: "other"}},
					Route: to(dest(other.Hostname, "", 0))},
				&networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{host}}}}, // no destinations
			)},
			want: []string{"filters=[tls_inspector]", "sni=[ext.example.com] cidr=[] outbound|443||ext.example.com",
				"default sni=[] cidr=[] PassthroughCluster"},
		},
		{
			name: "matches, duplicates, sticky subnets",
			vss: []*config.Config{tlsVS("a", []string{host},
				&networking.TLSRoute{Match: []*networking.TLSMatchAttributes{
					{SniHosts: []string{host}, SourceLabels: map[string]string{"app": "x"}},
					{SniHosts: []string{"z.example.com", host}, Gateways: []string{"mesh"}, Port: 443, SourceLabels: map[string]string{"app": "client"}},
				}, Route: to(dest(other.Hostname, "v1", 60), dest(host, "", 40))},
				&networking.TLSRoute{Match: []*networking.TLSMatchAttributes{
					{SniHosts: []string{"z.example.com", host}}, // handled above
					{SniHosts: []string{"a.example.com"}, DestinationSubnets: []string{"10.5.0.0/16"}},
					{SniHosts: []string{"b.example.com"}},
				}, Route: to(dest(other.Hostname, "", 0))},
			), tlsVS("b", []string{"*.example.com"}, &networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"c.example.com"}}},
				Route: to(dest(host, "", 0))})},
			want: []string{"filters=[tls_inspector]",
				"sni=[ext.example.com z.example.com] cidr=[] a.ns{outbound|8443|v1|other.ns.svc.cluster.local=60,outbound|443||ext.example.com=40} a",
				"sni=[a.example.com] cidr=[10.5.0.0/16] outbound|8443||other.ns.svc.cluster.local a",
				"sni=[b.example.com] cidr=[10.5.0.0/16] outbound|8443||other.ns.svc.cluster.local a",
				"sni=[c.example.com] cidr=[10.5.0.0/16] outbound|443||ext.example.com b",
				"default sni=[] cidr=[] PassthroughCluster"},
		},
		{
			// "*" matches any name: the chain is the only one, yet the
			// inspector stays (Istio looks at the names, not the match)
			name: "wildcard sni",
			vss: []*config.Config{tlsVS("a", []string{host}, &networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"*"}}},
				Route: to(dest(other.Hostname, "", 0))})},
			want: []string{"filters=[tls_inspector]", "sni=[] cidr=[] outbound|8443||other.ns.svc.cluster.local a"},
		},
		{
			name: "tcp routes do not apply to TLS ports",
			vss:  []*config.Config{tcpVS("t", []string{host}, &networking.TCPRoute{Route: to(dest(other.Hostname, "", 0))})},
			want: []string{"filters=[tls_inspector]", "sni=[ext.example.com] cidr=[] outbound|443||ext.example.com",
				"default sni=[] cidr=[] PassthroughCluster"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := listener.Options{AllowAny: true, VirtualServices: tc.vss, TCP: routing}
			got := tlsChains(t, listenerNamed(t, listener.BuildOutbound([]*model.Service{ext}, o), "0.0.0.0_443"))
			sameLines(t, "chains", got, tc.want)
		})
	}
}

// An HTTPS service with a VIP listens on it: without tls routes its one
// chain needs no SNI; with them, the chains match by SNI, the passthrough
// takes the rest, and tcp routes are ignored. A TCP port ignores tls routes.
func TestTLSRoutesOnHTTPSAndTCPPorts(t *testing.T) {
	const host = "api.ns.svc.cluster.local"
	api := svc(host, "10.0.0.7", &model.Port{Name: "https", Port: 443, Protocol: protocol.HTTPS}, &model.Port{Name: "tcp", Port: 9000, Protocol: protocol.TCP})
	vs := tlsVS("api", []string{host}, &networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{host}}},
		Route: []*networking.RouteDestination{dest(host, "v2", 0)}})
	o := listener.Options{AllowAny: false}
	sameLines(t, "no routes", tlsChains(t, listenerNamed(t, listener.BuildOutbound([]*model.Service{api}, o), "10.0.0.7_443")),
		[]string{"filters=[]", "sni=[] cidr=[] outbound|443||api.ns.svc.cluster.local"})
	o.VirtualServices = []*config.Config{vs}
	ls := listener.BuildOutbound([]*model.Service{api}, o)
	sameLines(t, "routes", tlsChains(t, listenerNamed(t, ls, "10.0.0.7_443")),
		[]string{"filters=[tls_inspector]", "sni=[api.ns.svc.cluster.local] cidr=[] outbound|443|v2|api.ns.svc.cluster.local api",
			"default sni=[] cidr=[] BlackHoleCluster"})
	sameLines(t, "tcp port", tlsChains(t, listenerNamed(t, ls, "10.0.0.7_9000")),
		[]string{"filters=[]", "sni=[] cidr=[] outbound|9000||api.ns.svc.cluster.local"})
}

// Two TLS services without a VIP share 0.0.0.0_443: chains whose server
// names are the same set (in another order) collide and the first stays.
func TestTLSRoutesMergeBySNISet(t *testing.T) {
	a := svc("a.example.com", "", &model.Port{Name: "tls", Port: 443, Protocol: protocol.TLS})
	b := svc("b.example.com", "", &model.Port{Name: "tls", Port: 443, Protocol: protocol.TLS})
	vsA := tlsVS("va", []string{"a.example.com"}, &networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"a.example.com", "x.example.com"}}},
		Route: []*networking.RouteDestination{dest("a.example.com", "", 0)}})
	vsB := tlsVS("vb", []string{"b.example.com"}, &networking.TLSRoute{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"x.example.com", "a.example.com"}}},
		Route: []*networking.RouteDestination{dest("b.example.com", "", 0)}})
	o := listener.Options{AllowAny: true, VirtualServices: []*config.Config{vsA, vsB}}
	got := tlsChains(t, listenerNamed(t, listener.BuildOutbound([]*model.Service{a, b}, o), "0.0.0.0_443"))
	want := []string{"filters=[tls_inspector]", "sni=[a.example.com x.example.com] cidr=[] outbound|443||a.example.com va",
		"default sni=[] cidr=[] PassthroughCluster"}
	sameLines(t, "chains", got, want)
}
