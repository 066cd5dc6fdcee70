package waypoint_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	xdsmatcher "github.com/cncf/xds/go/xds/type/matcher/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/waypoint"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func service(host, ns string, ports ...*model.Port) *model.Service {
	name, _, _ := cutDot(host)
	return &model.Service{Hostname: host, Ports: ports, DefaultAddress: "10.96.0.50",
		Attributes: model.ServiceAttributes{Name: name, Namespace: ns, ServiceRegistry: model.Kubernetes}}
}

func cutDot(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func listenerNamed(t *testing.T, ls []*listenerv3.Listener, name string) *listenerv3.Listener {
	t.Helper()
	for _, l := range ls {
		if l.GetName() == name {
			return l
		}
	}
	t.Fatalf("no listener %s", name)
	return nil
}

func chainHCM(t *testing.T, l *listenerv3.Listener, chain string) *hcm.HttpConnectionManager {
	t.Helper()
	for _, fc := range l.GetFilterChains() {
		if fc.GetName() != chain {
			continue
		}
		m := &hcm.HttpConnectionManager{}
		if err := fc.GetFilters()[len(fc.GetFilters())-1].GetTypedConfig().UnmarshalTo(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("no chain %s", chain)
	return nil
}

func clusterNamed(t *testing.T, cs []*clusterv3.Cluster, name string) *clusterv3.Cluster {
	t.Helper()
	for _, c := range cs {
		if c.GetName() == name {
			return c
		}
	}
	t.Fatalf("no cluster %s", name)
	return nil
}

// Routes of a VirtualService go to the inbound-vip cluster of the
// destinations the waypoint serves (by the destination port's protocol,
// with the subset after it) and to outbound clusters for the others.
func TestRoutesToWaypointAndOtherServices(t *testing.T) {
	api := service("api.shop.svc.cluster.local", "shop", &model.Port{Name: "http", Port: 8080, Protocol: protocol.HTTP})
	other := service("other.shop.svc.cluster.local", "shop", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP})
	vs := &config.Config{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: "api", Namespace: "shop"},
		Spec: &networking.VirtualService{Hosts: []string{api.Hostname}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{
				{Destination: &networking.Destination{Host: api.Hostname, Subset: "v1"}, Weight: 90},
				{Destination: &networking.Destination{Host: other.Hostname}, Weight: 10},
			},
		}}}}
	byHost := map[string]*model.Service{api.Hostname: api, other.Hostname: other}
	o := waypoint.Options{Namespace: "shop", IsWaypointService: func(h string) bool { return h == api.Hostname }}
	o.Routes.LookupService = func(h string) *model.Service { return byHost[h] }
	ls := waypoint.Listeners([]waypoint.Service{{Service: api, VIPs: []string{"10.96.0.50"}, VirtualServices: []*config.Config{vs}}}, o)
	m := chainHCM(t, listenerNamed(t, ls, waypoint.MainInternal), "inbound-vip|8080|http|api.shop.svc.cluster.local")
	vh := m.GetRouteConfig().GetVirtualHosts()[0]
	if vh.GetName() != "inbound|http|8080" || !slices.Equal(vh.GetDomains(), []string{"*"}) {
		t.Errorf("virtual host %s %v", vh.GetName(), vh.GetDomains())
	}
	var got []string
	for _, w := range vh.GetRoutes()[0].GetRoute().GetWeightedClusters().GetClusters() {
		got = append(got, w.GetName())
	}
	want := []string{"inbound-vip|8080|http/v1|api.shop.svc.cluster.local", "outbound|80||other.shop.svc.cluster.local"}
	if !slices.Equal(got, want) {
		t.Errorf("weighted clusters %v, want %v", got, want)
	}
}

// A port none of the VirtualService's matches take keeps the default route
// to its own cluster, with the limits of an inbound route configuration.
func TestDefaultRouteWhenVirtualServiceSkipsPort(t *testing.T) {
	api := service("api.shop.svc.cluster.local", "shop", &model.Port{Name: "http", Port: 8080, Protocol: protocol.HTTP})
	vs := &config.Config{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: "api", Namespace: "shop"},
		Spec: &networking.VirtualService{Hosts: []string{api.Hostname}, Http: []*networking.HTTPRoute{{
			Match: []*networking.HTTPMatchRequest{{Port: 9999}},
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: api.Hostname}}},
		}}}}
	ls := waypoint.Listeners([]waypoint.Service{{Service: api, VIPs: []string{"10.96.0.50"}, VirtualServices: []*config.Config{vs}}},
		waypoint.Options{Namespace: "shop"})
	name := "inbound-vip|8080|http|api.shop.svc.cluster.local"
	rc := chainHCM(t, listenerNamed(t, ls, waypoint.MainInternal), name).GetRouteConfig()
	r := rc.GetVirtualHosts()[0].GetRoutes()
	if len(r) != 1 || r[0].GetName() != "default" || r[0].GetRoute().GetCluster() != name {
		t.Fatalf("routes %v, want the default route to %s", r, name)
	}
	if rc.GetMaxDirectResponseBodySizeBytes().GetValue() != 1<<20 || r[0].GetDecorator().GetOperation() != "api.shop.svc.cluster.local:8080/*" {
		t.Errorf("default route configuration %v", rc)
	}
}

// Workloads that use the waypoint reach the direct chains, sniffed between
// HTTP and TCP, and keep HTTP sniffing on every port.
func TestWorkloadAddressing(t *testing.T) {
	api := service("api.shop.svc.cluster.local", "shop", &model.Port{Name: "http", Port: 8080, Protocol: protocol.HTTP})
	o := waypoint.Options{Namespace: "shop", Workloads: []netip.Addr{netip.MustParseAddr("10.244.1.5"), netip.MustParseAddr("fd00::5")}}
	l := listenerNamed(t, waypoint.Listeners([]waypoint.Service{{Service: api, VIPs: []string{"10.96.0.50"}}}, o), waypoint.MainInternal)
	ipm := &xdsmatcher.IPMatcher{}
	if err := l.GetFilterChainMatcher().GetMatcherTree().GetCustomMatch().GetTypedConfig().UnmarshalTo(ipm); err != nil {
		t.Fatal(err)
	}
	if n := len(ipm.GetRangeMatchers()); n != 2 {
		t.Fatalf("%d range matchers, want the VIP's and the workloads'", n)
	}
	wl := ipm.GetRangeMatchers()[1]
	var ranges []string
	for _, r := range wl.GetRanges() {
		ranges = append(ranges, r.GetAddressPrefix()+"/"+r.GetPrefixLen().String())
	}
	if len(ranges) != 2 || wl.GetRanges()[0].GetPrefixLen().GetValue() != 32 || wl.GetRanges()[1].GetPrefixLen().GetValue() != 128 {
		t.Errorf("workload ranges %v", ranges)
	}
	sniff := wl.GetOnMatch().GetMatcher()
	if sniff.GetOnNoMatch().GetAction().GetName() != waypoint.DirectTCP ||
		sniff.GetMatcherTree().GetExactMatchMap().GetMap()["'h2c'"].GetAction().GetName() != waypoint.DirectHTTP {
		t.Errorf("workloads are not sniffed between the direct chains: %v", sniff)
	}
	for _, f := range l.GetListenerFilters() {
		if f.GetName() == "envoy.filters.listener.http_inspector" && f.GetFilterDisabled() != nil {
			t.Errorf("http_inspector disabled with workloads: %v", f.GetFilterDisabled())
		}
	}
}

// UDP ports get neither a cluster nor a chain; gRPC ports get HTTP/2
// upstream and downstream; connect_originate accepts the waypoint
// namespace's identities and follows the mesh's HBONE idle timeout; the
// HBONE listener of an IPv6 waypoint binds "::".
func TestClustersAndOptions(t *testing.T) {
	svc := service("dns.shop.svc.cluster.local", "shop",
		&model.Port{Name: "udp", Port: 53, Protocol: protocol.UDP},
		&model.Port{Name: "grpc", Port: 9000, Protocol: protocol.GRPC})
	mesh := &meshconfig.MeshConfig{TrustDomain: "example.org", HboneIdleTimeout: durationpb.New(time.Minute)}
	o := waypoint.Options{Mesh: mesh, Namespace: "shop", Bind: "::"}
	cs := waypoint.Clusters([]waypoint.Service{{Service: svc}}, o)
	var names []string
	for _, c := range cs {
		names = append(names, c.GetName())
	}
	want := []string{"main_internal", "encap", "inbound-vip|9000|http|dns.shop.svc.cluster.local", "connect_originate"}
	if !slices.Equal(names, want) {
		t.Errorf("clusters %v, want %v", names, want)
	}
	opts := &httpv3.HttpProtocolOptions{}
	if err := clusterNamed(t, cs, want[2]).GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(opts); err != nil {
		t.Fatal(err)
	}
	if opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
		t.Errorf("gRPC cluster without HTTP/2: %v", opts)
	}
	co := clusterNamed(t, cs, "connect_originate")
	tls := &tlsv3.UpstreamTlsContext{}
	if err := co.GetTransportSocket().GetTypedConfig().UnmarshalTo(tls); err != nil {
		t.Fatal(err)
	}
	var sans []string
	for _, m := range tls.GetCommonTlsContext().GetCombinedValidationContext().GetDefaultValidationContext().GetMatchTypedSubjectAltNames() {
		sans = append(sans, m.GetMatcher().GetPrefix())
	}
	if want := []string{"spiffe://example.org/", "spiffe://example.org/ns/shop/sa/"}; !slices.Equal(sans, want) {
		t.Errorf("connect_originate SANs %v, want %v", sans, want)
	}
	copts := &httpv3.HttpProtocolOptions{}
	if err := co.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(copts); err != nil {
		t.Fatal(err)
	}
	if got := copts.GetCommonHttpProtocolOptions().GetIdleTimeout().AsDuration(); got != time.Minute {
		t.Errorf("HBONE idle timeout %v, want 1m", got)
	}

	ls := waypoint.Listeners([]waypoint.Service{{Service: svc, VIPs: []string{"10.96.0.53"}}}, o)
	if got := listenerNamed(t, ls, waypoint.ConnectTerminate).GetAddress().GetSocketAddress().GetAddress(); got != "::" {
		t.Errorf("connect_terminate binds %q", got)
	}
	mi := listenerNamed(t, ls, waypoint.MainInternal)
	var chains []string
	for _, fc := range mi.GetFilterChains() {
		chains = append(chains, fc.GetName())
	}
	if want := []string{"inbound-vip|9000|http|dns.shop.svc.cluster.local", "direct-tcp", "direct-http"}; !slices.Equal(chains, want) {
		t.Errorf("chains %v, want %v", chains, want)
	}
	if chainHCM(t, mi, chains[0]).GetHttp2ProtocolOptions() == nil {
		t.Error("gRPC chain without HTTP/2 options")
	}
}

// A service without addresses gets its chains but no VIP match.
func TestServiceWithoutVIP(t *testing.T) {
	svc := service("api.shop.svc.cluster.local", "shop", &model.Port{Name: "tcp", Port: 5432, Protocol: protocol.TCP})
	mi := listenerNamed(t, waypoint.Listeners([]waypoint.Service{{Service: svc}}, waypoint.Options{}), waypoint.MainInternal)
	ipm := &xdsmatcher.IPMatcher{}
	if err := mi.GetFilterChainMatcher().GetMatcherTree().GetCustomMatch().GetTypedConfig().UnmarshalTo(ipm); err != nil {
		t.Fatal(err)
	}
	if len(ipm.GetRangeMatchers()) != 0 {
		t.Errorf("range matchers %v for a service without VIPs", ipm.GetRangeMatchers())
	}
	if mi.GetFilterChains()[0].GetName() != "inbound-vip|5432|tcp|api.shop.svc.cluster.local" {
		t.Errorf("chains %v", mi.GetFilterChains())
	}
}
