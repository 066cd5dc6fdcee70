package generators_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	xdsmatcher "github.com/cncf/xds/go/xds/type/matcher/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	security "istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

const (
	bookingHost = "booking.travel.svc.cluster.local"
	bookingHTTP = "inbound-vip|9080|http|" + bookingHost
)

// watchAll subscribes the client to every listener and cluster and
// returns them by name.
func watchAll(t *testing.T, c *adsc.Client) (map[string]*listenerv3.Listener, map[string]*clusterv3.Cluster) {
	t.Helper()
	for _, typ := range []string{xds.ClusterType, xds.ListenerType} {
		if err := c.Watch(typ); err != nil {
			t.Fatal(err)
		}
		xdstest.Next(t, c)
	}
	ls := map[string]*listenerv3.Listener{}
	for _, n := range c.State(xds.ListenerType) {
		ls[n] = c.Resource(xds.ListenerType, n).(*listenerv3.Listener)
	}
	cs := map[string]*clusterv3.Cluster{}
	for _, n := range c.State(xds.ClusterType) {
		cs[n] = c.Resource(xds.ClusterType, n).(*clusterv3.Cluster)
	}
	return ls, cs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func chainNames(l *listenerv3.Listener) []string {
	var out []string
	for _, fc := range l.GetFilterChains() {
		out = append(out, fc.GetName())
	}
	return out
}

func chainNamed(t *testing.T, l *listenerv3.Listener, name string) *listenerv3.FilterChain {
	t.Helper()
	for _, fc := range l.GetFilterChains() {
		if fc.GetName() == name {
			return fc
		}
	}
	t.Fatalf("%s: no chain %q (chains %v)", l.GetName(), name, chainNames(l))
	return nil
}

func chainFilterNames(fc *listenerv3.FilterChain) []string {
	var out []string
	for _, f := range fc.GetFilters() {
		out = append(out, f.GetName())
	}
	return out
}

// ipMatcher is main_internal's destination IP matcher.
func ipMatcher(t *testing.T, l *listenerv3.Listener) *xdsmatcher.IPMatcher {
	t.Helper()
	m := &xdsmatcher.IPMatcher{}
	if err := l.GetFilterChainMatcher().GetMatcherTree().GetCustomMatch().GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWaypointGetsNoSidecarListeners: a waypoint proxy gets the waypoint's
// listeners and clusters, never a sidecar's (virtualOutbound,
// virtualInbound, outbound|... clusters), which it was served before it
// had generators of its own.
func TestWaypointGetsNoSidecarListeners(t *testing.T) {
	c := loadAmbientReference(t).dial(t, waypointProxy)
	ls, cs := watchAll(t, c)
	if got, want := sortedKeys(ls), []string{"connect_originate", "connect_terminate", "main_internal"}; !slices.Equal(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	if got, want := sortedKeys(cs), []string{"connect_originate", "encap", bookingHTTP, "main_internal"}; !slices.Equal(got, want) {
		t.Errorf("clusters %v, want %v", got, want)
	}
}

// TestWaypointGeneratorsOnlyForWaypoints: with the waypoint generators
// registered, a sidecar of the same mesh still gets sidecar listeners.
func TestWaypointGeneratorsOnlyForWaypoints(t *testing.T) {
	sidecar := adsc.Config{Delta: true, NodeID: "sidecar~10.244.5.1~flights-7b9c4-q1w2e.travel~travel.svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": "travel", "CLUSTER_ID": "Kubernetes", "LABELS": map[string]any{"app": "flights"},
			"INSTANCE_IPS": "10.244.5.1"}}
	c := loadAmbientReference(t).dial(t, sidecar)
	ls, _ := watchAll(t, c)
	if _, ok := ls["virtualOutbound"]; !ok {
		t.Errorf("sidecar listeners %v: no virtualOutbound", sortedKeys(ls))
	}
	if _, ok := ls["main_internal"]; ok {
		t.Errorf("sidecar got the waypoint listener main_internal")
	}
}

// TestWaypointWithoutServices: a waypoint no service uses (the booking
// Service without istio.io/use-waypoint) keeps its three listeners and the
// fixed clusters; main_internal has only the direct chains, no VIP to
// match, and sniffs HTTP on every port (nothing says a port's protocol).
func TestWaypointWithoutServices(t *testing.T) {
	ref := loadAmbientReference(t)
	for _, o := range ref.objs {
		if s, ok := o.(*corev1.Service); ok && s.Name == "booking" {
			delete(s.Labels, "istio.io/use-waypoint")
		}
	}
	c := xdstest.Dial(t, ref.serve(t, 0).s, waypointProxy)
	ls, cs := watchAll(t, c)
	if got, want := sortedKeys(cs), []string{"connect_originate", "encap", "main_internal"}; !slices.Equal(got, want) {
		t.Errorf("clusters %v, want %v", got, want)
	}
	mi := ls["main_internal"]
	if mi == nil {
		t.Fatalf("no main_internal in %v", sortedKeys(ls))
	}
	if got, want := chainNames(mi), []string{"direct-tcp", "direct-http"}; !slices.Equal(got, want) {
		t.Errorf("main_internal chains %v, want %v", got, want)
	}
	if n := len(ipMatcher(t, mi).GetRangeMatchers()); n != 0 {
		t.Errorf("main_internal matches %d address ranges, want none", n)
	}
	for _, f := range mi.GetListenerFilters() {
		if f.GetName() == "envoy.filters.listener.http_inspector" && f.GetFilterDisabled() != nil {
			t.Errorf("http_inspector disabled on %v with no service ports", f.GetFilterDisabled())
		}
	}
}

// TestWaypointTCPAndSniffedPorts: a TCP port of a service gets a tcp_proxy
// chain (metadata exchange, the service's policy as network RBAC, the
// proxy to its inbound-vip tcp cluster); a port whose protocol is unknown
// gets both chains, chosen by the detected application protocol, and
// keeps HTTP sniffing, which the declared ports turn off.
func TestWaypointTCPAndSniffedPorts(t *testing.T) {
	ref := loadAmbientReference(t)
	for _, o := range ref.objs {
		switch v := o.(type) {
		case *corev1.Service:
			if v.Name == "booking" {
				v.Spec.Ports = append(v.Spec.Ports,
					corev1.ServicePort{Name: "tcp-admin", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
					corev1.ServicePort{Name: "other", Port: 7000, TargetPort: intstr.FromInt32(7000), Protocol: corev1.ProtocolTCP})
			}
		case *discoveryv1.EndpointSlice:
			if v.Name == "booking-a1" {
				for _, p := range []struct {
					name string
					port int32
				}{{"tcp-admin", 9090}, {"other", 7000}} {
					v.Ports = append(v.Ports, discoveryv1.EndpointPort{Name: &p.name, Port: &p.port})
				}
			}
		}
	}
	srv := ref.serve(t, 1)
	c := xdstest.Dial(t, srv.s, waypointProxy)
	ls, cs := watchAll(t, c)
	tcpName := "inbound-vip|9090|tcp|" + bookingHost
	wantClusters := []string{"connect_originate", "encap", "inbound-vip|7000|http|" + bookingHost, "inbound-vip|7000|tcp|" + bookingHost,
		bookingHTTP, tcpName, "main_internal"}
	if got := sortedKeys(cs); !slices.Equal(got, wantClusters) {
		t.Errorf("clusters %v, want %v", got, wantClusters)
	}
	mi := ls["main_internal"]
	wantChains := []string{bookingHTTP, tcpName, "inbound-vip|7000|tcp|" + bookingHost, "inbound-vip|7000|http|" + bookingHost,
		"direct-tcp", "direct-http"}
	if got := chainNames(mi); !slices.Equal(got, wantChains) {
		t.Errorf("main_internal chains %v, want %v", got, wantChains)
	}
	tcp := chainNamed(t, mi, tcpName)
	if got, want := chainFilterNames(tcp), []string{"istio.metadata_exchange", "envoy.filters.network.rbac", "envoy.filters.network.tcp_proxy"}; !slices.Equal(got, want) {
		t.Errorf("tcp chain filters %v, want %v", got, want)
	}
	tp := &tcpproxy.TcpProxy{}
	if err := tcp.GetFilters()[2].GetTypedConfig().UnmarshalTo(tp); err != nil {
		t.Fatal(err)
	}
	if tp.GetCluster() != tcpName || tp.GetStatPrefix() != tcpName {
		t.Errorf("tcp_proxy to %q (stats %q), want %q", tp.GetCluster(), tp.GetStatPrefix(), tcpName)
	}
	ports := ipMatcher(t, mi).GetRangeMatchers()[0].GetOnMatch().GetMatcher().GetMatcherTree().GetExactMatchMap().GetMap()
	if got := ports["9090"].GetAction().GetName(); got != tcpName {
		t.Errorf("port 9090 goes to %q, want %q", got, tcpName)
	}
	sniff := ports["7000"].GetMatcher().GetMatcherTree()
	if sniff.GetInput().GetName() != "application-protocol" ||
		sniff.GetExactMatchMap().GetMap()["'http/1.1'"].GetAction().GetName() != "inbound-vip|7000|http|"+bookingHost ||
		ports["7000"].GetMatcher().GetOnNoMatch().GetAction().GetName() != "inbound-vip|7000|tcp|"+bookingHost {
		t.Errorf("port 7000 is not sniffed between its chains: %v", ports["7000"])
	}
	var disabled []int32
	for _, f := range mi.GetListenerFilters() {
		if f.GetName() != "envoy.filters.listener.http_inspector" {
			continue
		}
		for _, r := range f.GetFilterDisabled().GetOrMatch().GetRules() {
			disabled = append(disabled, r.GetDestinationPortRange().GetStart())
		}
	}
	if want := []int32{9080, 9090}; !slices.Equal(disabled, want) {
		t.Errorf("http_inspector disabled on ports %v, want %v", disabled, want)
	}

	if err := c.Watch(xds.EndpointType, tcpName); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	la := c.Resource(xds.EndpointType, tcpName).(*endpointv3.ClusterLoadAssignment)
	var ids []string
	for _, g := range la.GetEndpoints() {
		for _, e := range g.GetLbEndpoints() {
			a := e.GetEndpoint().GetAddress().GetEnvoyInternalAddress()
			ids = append(ids, a.GetServerListenerName()+"/"+a.GetEndpointId())
		}
	}
	if want := []string{"connect_originate/10.244.6.2:9090"}; !slices.Equal(ids, want) {
		t.Errorf("%s endpoints %v, want %v", tcpName, ids, want)
	}
}

// TestWaypointVirtualServiceChange: a VirtualService change pushes the
// waypoint (Istio pushes waypoints on every change: their scope is not a
// sidecar scope) and its inbound-vip route follows the new routes.
func TestWaypointVirtualServiceChange(t *testing.T) {
	ref := loadAmbientReference(t)
	srv := ref.serve(t, 1)
	c := xdstest.Dial(t, srv.s, waypointProxy)
	ls, _ := watchAll(t, c)
	if got := bookingTimeout(t, ls["main_internal"]); got != 3*time.Second {
		t.Fatalf("booking route timeout %v, want the reference's 3s", got)
	}
	var cp config.Config
	for _, cfg := range ref.istio {
		if cfg.GroupVersionKind == gvk.VirtualService && cfg.Name == "booking-timeouts" {
			cp = cfg.DeepCopy()
		}
	}
	if cp.Spec == nil {
		t.Fatal("no VirtualService travel/booking-timeouts")
	}
	cp.Spec.(*networking.VirtualService).Http[0].Timeout.Seconds = 5
	if _, err := srv.store.Update(cp); err != nil {
		t.Fatal(err)
	}
	req := &model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ConfigUpdate),
		ConfigsUpdated: map[model.ConfigKey]struct{}{{Kind: kind.VirtualService, Name: "booking-timeouts", Namespace: "travel"}: {}}}
	if res := srv.s.DS.PushFunc(srv.env)(req); res.ProxiesPushed != 1 {
		t.Fatalf("the VirtualService change pushed %d proxies, want the waypoint", res.ProxiesPushed)
	}
	deadline := time.Now().Add(xdstest.Timeout)
	for {
		r := xdstest.Next(t, c)
		if r.TypeURL == xds.ListenerType {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no listener push")
		}
	}
	l := c.Resource(xds.ListenerType, "main_internal").(*listenerv3.Listener)
	if got := bookingTimeout(t, l); got != 5*time.Second {
		t.Errorf("after the change the booking route timeout is %v, want 5s", got)
	}
}

// bookingTimeout is the timeout of the first route of the booking chain.
func bookingTimeout(t *testing.T, l *listenerv3.Listener) time.Duration {
	t.Helper()
	m := &hcm.HttpConnectionManager{}
	if err := chainNamed(t, l, bookingHTTP).GetFilters()[0].GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	rs := m.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()
	if len(rs) == 0 {
		t.Fatal("booking chain has no routes")
	}
	return rs[0].GetRoute().GetTimeout().AsDuration()
}

// TestWaypointEndpointChange: an endpoint-only change of a service reaches
// the waypoint's load assignment; an endpoint the ambient index does not
// know as HBONE-capable is addressed directly, not through
// connect_originate.
func TestWaypointEndpointChange(t *testing.T) {
	srv := loadAmbientReference(t).serve(t, 1)
	c := xdstest.Dial(t, srv.s, waypointProxy)
	if err := c.Watch(xds.EndpointType, bookingHTTP); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	shard := model.NewShardKey(model.Kubernetes, "Kubernetes")
	sh, ok := srv.endpoints.ShardsFor(bookingHost, "travel")
	if !ok {
		t.Fatal("no booking endpoints")
	}
	eps := sh.Endpoints(shard)
	extra := *eps[0]
	extra.Addresses = []string{"10.244.6.99"}
	extra.WorkloadName = "booking-legacy"
	srv.endpoints.UpdateServiceEndpoints(shard, bookingHost, "travel", append(append([]*model.IstioEndpoint{}, eps...), &extra))
	srv.s.DS.PushFunc(srv.env)(&model.PushRequest{ConfigsUpdated: map[model.ConfigKey]struct{}{
		{Kind: kind.ServiceEntry, Name: bookingHost, Namespace: "travel"}: {}}})
	for r := xdstest.Next(t, c); r.TypeURL != xds.EndpointType; r = xdstest.Next(t, c) {
	}
	la := c.Resource(xds.EndpointType, bookingHTTP).(*endpointv3.ClusterLoadAssignment)
	var got []string
	for _, g := range la.GetEndpoints() {
		for _, e := range g.GetLbEndpoints() {
			a := e.GetEndpoint().GetAddress()
			if ia := a.GetEnvoyInternalAddress(); ia != nil {
				got = append(got, "internal:"+ia.GetServerListenerName()+"/"+ia.GetEndpointId())
			} else {
				got = append(got, fmt.Sprintf("socket:%s:%d", a.GetSocketAddress().GetAddress(), a.GetSocketAddress().GetPortValue()))
			}
		}
	}
	slices.Sort(got)
	if want := []string{"internal:connect_originate/10.244.6.2:9080", "socket:10.244.6.99:9080"}; !slices.Equal(got, want) {
		t.Errorf("booking endpoints after the change %v, want %v", got, want)
	}
}

// TestWaypointPolicyAttachment: a waypoint takes policies through
// targetRefs only: a RequestAuthentication and the AuthorizationPolicy of
// the booking Service on booking's chain (JWT between them), a policy of
// the waypoint's Gateway on the direct chains (and booking's), never a
// selector or namespace-wide policy (ztunnel enforces those).
func TestWaypointPolicyAttachment(t *testing.T) {
	ref := loadAmbientReference(t)
	put := func(k config.GroupVersionKind, name string, spec any) {
		ref.istio = append(ref.istio, config.Config{Meta: config.Meta{GroupVersionKind: k, Name: name, Namespace: "travel",
			Domain: "cluster.local", CreationTimestamp: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}, Spec: spec})
	}
	service := []*typeapi.PolicyTargetReference{{Kind: "Service", Group: "", Name: "booking"}}
	gateway := []*typeapi.PolicyTargetReference{{Kind: "Gateway", Group: "gateway.networking.k8s.io", Name: "booking-waypoint"}}
	put(gvk.RequestAuthentication, "booking-jwt", &security.RequestAuthentication{TargetRefs: service,
		JwtRules: []*security.JWTRule{{Issuer: "https://issuer.example", Jwks: `{"keys":[]}`}}})
	put(gvk.AuthorizationPolicy, "waypoint-deny", &security.AuthorizationPolicy{TargetRefs: gateway,
		Action: security.AuthorizationPolicy_DENY, Rules: []*security.Rule{{To: []*security.Rule_To{{Operation: &security.Operation{Paths: []string{"/admin"}}}}}}})
	put(gvk.AuthorizationPolicy, "namespace-wide", &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_DENY,
		Rules: []*security.Rule{{}}})
	c := xdstest.Dial(t, ref.serve(t, 1).s, waypointProxy)
	ls, _ := watchAll(t, c)
	mi := ls["main_internal"]
	filters := func(chain string) []string {
		m := &hcm.HttpConnectionManager{}
		fc := chainNamed(t, mi, chain)
		if err := fc.GetFilters()[len(fc.GetFilters())-1].GetTypedConfig().UnmarshalTo(m); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range m.GetHttpFilters() {
			out = append(out, f.GetName())
		}
		return out
	}
	tail := []string{"envoy.filters.http.grpc_stats", "envoy.filters.http.fault", "envoy.filters.http.cors",
		"waypoint_upstream_peer_metadata", "envoy.filters.http.router"}
	// one DENY filter (the Gateway's) and one ALLOW filter (the Service's)
	wantBooking := append([]string{"envoy.filters.http.jwt_authn", "envoy.filters.http.rbac", "envoy.filters.http.rbac"}, tail...)
	if got := filters(bookingHTTP); !slices.Equal(got, wantBooking) {
		t.Errorf("booking chain filters %v, want %v", got, wantBooking)
	}
	wantDirect := append([]string{"envoy.filters.http.rbac"}, tail...)
	if got := filters("direct-http"); !slices.Equal(got, wantDirect) {
		t.Errorf("direct-http filters %v, want %v", got, wantDirect)
	}
}

// TestWaypointDestinationRule: a DestinationRule's subsets get inbound-vip
// clusters of their own ("http/<subset>"), shaped by its traffic policy,
// which a VirtualService routing to the subset reaches; a subset's load
// assignment has only the endpoints its labels select.
func TestWaypointDestinationRule(t *testing.T) {
	ref := loadAmbientReference(t)
	ref.istio = append(ref.istio, config.Config{Meta: config.Meta{GroupVersionKind: gvk.DestinationRule, Name: "booking",
		Namespace: "travel", Domain: "cluster.local"}, Spec: &networking.DestinationRule{Host: bookingHost,
		TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer:     &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}},
			OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3)},
		},
		Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}}})
	for i, c := range ref.istio {
		if c.GroupVersionKind == gvk.VirtualService && c.Name == "booking-timeouts" {
			cp := c.DeepCopy()
			cp.Spec.(*networking.VirtualService).Http[0].Route[0].Destination.Subset = "v1"
			ref.istio[i] = cp
		}
	}
	c := xdstest.Dial(t, ref.serve(t, 1).s, waypointProxy)
	ls, cs := watchAll(t, c)
	v1 := "inbound-vip|9080|http/v1|" + bookingHost
	for _, n := range []string{bookingHTTP, v1} {
		cl := cs[n]
		if cl == nil {
			t.Fatalf("no cluster %s in %v", n, sortedKeys(cs))
		}
		if cl.GetLbPolicy() != clusterv3.Cluster_ROUND_ROBIN || cl.GetOutlierDetection().GetConsecutive_5Xx().GetValue() != 3 {
			t.Errorf("%s: lb %v, outlier detection %v: not the rule's", n, cl.GetLbPolicy(), cl.GetOutlierDetection())
		}
		// Istio names no rule in an inbound-vip cluster's metadata
		// (tests/differential TestWaypointTwoServices)
		md := cl.GetMetadata().GetFilterMetadata()["istio"].GetFields()
		if _, ok := md["config"]; ok {
			t.Errorf("%s: metadata %v names the rule", n, md)
		}
	}
	if got := cs[v1].GetMetadata().GetFilterMetadata()["istio"].GetFields()["subset"].GetStringValue(); got != "http/v1" {
		t.Errorf("subset metadata %q", got)
	}
	m := &hcm.HttpConnectionManager{}
	if err := chainNamed(t, ls["main_internal"], bookingHTTP).GetFilters()[0].GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetCluster(); got != v1 {
		t.Errorf("the route to subset v1 goes to %q, want %q", got, v1)
	}
	if err := c.Watch(xds.EndpointType, bookingHTTP, v1); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	count := func(name string) int {
		n := 0
		for _, g := range c.Resource(xds.EndpointType, name).(*endpointv3.ClusterLoadAssignment).GetEndpoints() {
			n += len(g.GetLbEndpoints())
		}
		return n
	}
	if count(bookingHTTP) != 1 || count(v1) != 0 {
		t.Errorf("endpoints: %d in the service's cluster (want 1), %d in v1's (want 0: the pod has no version label)", count(bookingHTTP), count(v1))
	}
}

// TestWaypointDNSService: a DNS ServiceEntry that uses the waypoint (an
// egress waypoint) gets an inbound-vip cluster that resolves the host
// itself, as its outbound cluster does, and a TCP chain for its TLS port
// behind the TLS inspector.
func TestWaypointDNSService(t *testing.T) {
	ref := loadAmbientReference(t)
	for i, c := range ref.istio {
		if c.GroupVersionKind == gvk.ServiceEntry && c.Name == "airline-api" {
			cp := c.DeepCopy()
			cp.Labels = map[string]string{"istio.io/use-waypoint": "booking-waypoint"}
			ref.istio[i] = cp
		}
	}
	c := xdstest.Dial(t, ref.serve(t, 2).s, waypointProxy)
	ls, cs := watchAll(t, c)
	name := "inbound-vip|443|tcp|api.airline.example"
	cl := cs[name]
	if cl == nil {
		t.Fatalf("no cluster %s in %v", name, sortedKeys(cs))
	}
	if cl.GetType() != clusterv3.Cluster_STRICT_DNS || cl.GetEdsClusterConfig() != nil {
		t.Errorf("%s is %v (eds %v), want STRICT_DNS", name, cl.GetType(), cl.GetEdsClusterConfig())
	}
	la := cl.GetLoadAssignment()
	if la.GetClusterName() != name || len(la.GetEndpoints()) != 1 ||
		la.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress() != "api.airline.example" {
		t.Errorf("%s endpoints %v, want the host itself", name, la)
	}
	mi := ls["main_internal"]
	if got := chainFilterNames(chainNamed(t, mi, name)); !slices.Equal(got, []string{"istio.metadata_exchange", "envoy.filters.network.tcp_proxy"}) {
		t.Errorf("%s chain filters %v", name, got)
	}
	var tlsInspector bool
	for _, f := range mi.GetListenerFilters() {
		tlsInspector = tlsInspector || f.GetName() == "envoy.filters.listener.tls_inspector"
	}
	if !tlsInspector {
		t.Error("no TLS inspector with a TLS port")
	}
}

// TestWaypointAlwaysNeedsPush: what push decides for waypoints, whose
// configuration depends on the ambient index (Address updates) and on
// config beyond any sidecar scope.
func TestWaypointAlwaysNeedsPush(t *testing.T) {
	srv := loadAmbientReference(t).serve(t, 1)
	proxy := proxyOf(t, waypointProxy.NodeID, waypointProxy.Metadata)
	push := srv.s.DS.PushContext()
	for _, k := range []model.ConfigKey{
		{Kind: kind.VirtualService, Name: "booking-timeouts", Namespace: "travel"},
		{Kind: kind.VirtualService, Name: "other", Namespace: "hotels"},
		{Kind: kind.AuthorizationPolicy, Name: "booking-get-only", Namespace: "travel"},
		{Kind: kind.Address, Name: "travel/" + bookingHost},
	} {
		req := &model.PushRequest{Full: true, Push: push, ConfigsUpdated: map[model.ConfigKey]struct{}{k: {}}}
		if !model.ProxyNeedsPush(proxy, req) {
			t.Errorf("%s: waypoint not pushed", fmt.Sprint(k))
		}
	}
}
