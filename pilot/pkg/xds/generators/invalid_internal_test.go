package generators

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbaccfg "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	rbacnet "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// A resource that fails validation is held (not sent, named with the
// reason) and counted; the valid resources around it are sent.
func TestInvalidResourcesAreHeld(t *testing.T) {
	before := invalidCount(t)
	bad := &clusterv3.Cluster{Name: "outbound|80||a.ns.svc.cluster.local", ConnectTimeout: nil,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}, LbPolicy: clusterv3.Cluster_LbPolicy(99)}
	good := &clusterv3.Cluster{Name: "outbound|80||b.ns.svc.cluster.local"}
	out := toResources(nil, xds.ClusterType, []*clusterv3.Cluster{bad, good}, func(c *clusterv3.Cluster) string { return c.Name })
	if len(out.Resources) != 1 || out.Resources[0].Name != good.Name {
		t.Fatalf("sent %v", out.Resources)
	}
	if len(out.Held) != 1 || out.Held[0].Name != bad.Name || !strings.Contains(out.Held[0].Reason, "LbPolicy") {
		t.Fatalf("held %+v", out.Held)
	}
	if got := invalidCount(t) - before; got != 1 {
		t.Errorf("pilot_xds_invalid_resources{type=cds} grew by %v", got)
	}
}

func invalidCount(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	if err := metricInvalidResources.WithLabelValues("cds").Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A regex Envoy would refuse to compile (ValidateAll only checks it is not
// empty) holds the resource, naming the field; one nested in a typed
// config packed in an Any is found too.
func TestInvalidRegexIsHeld(t *testing.T) {
	bad := &routev3.RouteConfiguration{Name: "8080", VirtualHosts: []*routev3.VirtualHost{{Name: "a", Domains: []string{"*"},
		Routes: []*routev3.Route{{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "a(b"}}},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 200}}}}}}}
	good := proto.Clone(bad).(*routev3.RouteConfiguration)
	good.Name = "9090"
	good.VirtualHosts[0].Routes[0].Match.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "a(b)"}}
	out := toResources(nil, xds.RouteType, []*routev3.RouteConfiguration{bad, good}, func(r *routev3.RouteConfiguration) string { return r.Name })
	if len(out.Resources) != 1 || out.Resources[0].Name != "9090" {
		t.Fatalf("sent %v", out.Resources)
	}
	if len(out.Held) != 1 || !strings.Contains(out.Held[0].Reason, "virtual_hosts[0].routes[0].match.safe_regex.regex") {
		t.Fatalf("held %+v", out.Held)
	}
	// nested in an Any
	rbac := &rbacv3.RBAC{Rules: &rbaccfg.RBAC{Policies: map[string]*rbaccfg.Policy{"p": {
		Permissions: []*rbaccfg.Permission{{Rule: &rbaccfg.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{
			Path: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "(?<=x)"}}}}}}}},
		Principals: []*rbaccfg.Principal{{Identifier: &rbaccfg.Principal_Any{Any: true}}}}}}}
	l := &listenerv3.Listener{Name: "l", Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{Address: "0.0.0.0", PortSpecifier: &core.SocketAddress_PortValue{PortValue: 1}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.rbac",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: protoconv.MessageToAny(&rbacnet.RBAC{StatPrefix: "tcp.", Rules: rbac.Rules})}}}}}}
	if out := toResources(nil, xds.ListenerType, []*listenerv3.Listener{l}, func(l *listenerv3.Listener) string { return l.Name }); len(out.Held) != 1 {
		t.Errorf("a bad regex inside a typed config was sent: %+v", out)
	}
}
