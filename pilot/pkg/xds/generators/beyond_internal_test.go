package generators

import (
	"fmt"
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func regexRoute(re string) *routev3.Route {
	return &routev3.Route{
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcher.RegexMatcher{Regex: re}}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"},
			RetryPolicy: &routev3.RetryPolicy{RetryHostPredicate: []*routev3.RetryPolicy_RetryHostPredicate{{Name: "previous_hosts",
				ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: mustAny(&matcher.RegexMatcher{Regex: "("})}}}}}},
	}
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func routeConfig(n int, bad string) *routev3.RouteConfiguration {
	rc := &routev3.RouteConfiguration{Name: "80"}
	for i := 0; i < n; i++ {
		vh := &routev3.VirtualHost{Name: fmt.Sprintf("h%d", i), Domains: []string{fmt.Sprintf("h%d", i)}}
		for j := 0; j < 5; j++ {
			r := regexRoute("/ok/[a-z]+")
			if j != 2 {
				r.Match.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/"}
			}
			vh.Routes = append(vh.Routes, r)
		}
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
	}
	if bad != "" {
		rc.VirtualHosts[n-1].Routes[2] = regexRoute(bad)
	}
	return rc
}

// A regex RE2 refuses is found wherever user config puts one: a route
// match, a route inline in a connection manager, an RBAC filter's header
// rule; the error names the field path. Any fields that never carry user
// regexes (here a retry host predicate holding, for the test, a broken
// matcher) are not entered.
func TestCheckBeyondValidation(t *testing.T) {
	if err := checkBeyondValidation(routeConfig(3, "")); err != nil {
		t.Fatalf("valid route configuration: %v", err)
	}
	err := checkBeyondValidation(routeConfig(3, "/a(?=b)"))
	if err == nil || !strings.Contains(err.Error(), ".virtual_hosts[2].routes[2].match.safe_regex.regex") {
		t.Errorf("route match: %v", err)
	}

	inline := &hcm.HttpConnectionManager{RouteSpecifier: &hcm.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig(1, `\1`)},
		HttpFilters: []*hcm.HttpFilter{{Name: "envoy.filters.http.rbac", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(&rbachttp.RBAC{
			Rules: &rbacv3.RBAC{Policies: map[string]*rbacv3.Policy{"p": {
				Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_Header{Header: &routev3.HeaderMatcher{Name: "x",
					HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcher.StringMatcher{
						MatchPattern: &matcher.StringMatcher_SafeRegex{SafeRegex: &matcher.RegexMatcher{Regex: "a{2,1}"}}}}}}}},
				Principals: []*rbacv3.Principal{{Identifier: &rbacv3.Principal_Any{Any: true}}}}}}})}}}}
	l := &listenerv3.Listener{Name: "l", Address: &core.Address{}, FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
		Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(inline)}}}}}}
	if err := checkBeyondValidation(l); err == nil || !strings.Contains(err.Error(), `.route_config.virtual_hosts[0].routes[2].match.safe_regex.regex "\\1"`) {
		t.Errorf("inline route: %v", err)
	}
	inline.RouteSpecifier = &hcm.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig(1, "")}
	l.FilterChains[0].Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(inline)}
	if err := checkBeyondValidation(l); err == nil || !strings.Contains(err.Error(), `"a{2,1}"`) {
		t.Errorf("RBAC header rule: %v", err)
	}
}

// BenchmarkCheckBeyondValidation walks a route configuration of 500
// virtual hosts of 5 routes with retry policies, one route of each with a
// regex (500 regexes compiled).
func BenchmarkCheckBeyondValidation(b *testing.B) {
	rc := routeConfig(500, "")
	b.ReportAllocs()
	for b.Loop() {
		if err := checkBeyondValidation(rc); err != nil {
			b.Fatal(err)
		}
	}
}
