package route_test

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func headerHash(h string) *networking.LoadBalancerSettings_ConsistentHashLB {
	return &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: h}}
}

func hashedDR() *networking.DestinationRule {
	return &networking.DestinationRule{
		TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
			LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: headerHash("x-user")}}},
		Subsets: []*networking.Subset{{Name: "v2", TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
			LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: headerHash("x-v2")}}}}},
	}
}

func actionOf(t *testing.T, rc *routev3.RouteConfiguration) *routev3.RouteAction {
	t.Helper()
	for _, vh := range rc.VirtualHosts {
		if vh.Name == "reviews.bookinfo.svc.cluster.local:9080" {
			return vh.Routes[0].GetRoute()
		}
	}
	t.Fatal("no reviews virtual host")
	return nil
}

// Consistent hashing of a destination's DestinationRule becomes the
// route's hash policy (the subset's beating the rule's), retries then keep
// to the hashed host; a zero weight among others is left out; retryOn
// status codes become retriable status codes.
func TestHashPolicyAndRetries(t *testing.T) {
	s := svc("reviews", "10.0.0.1", 9080, protocol.HTTP)
	dr := hashedDR()
	opts := route.Options{ProxyNamespace: "bookinfo", DomainSuffix: "cluster.local",
		Hash: func(d *networking.Destination) *networking.LoadBalancerSettings_ConsistentHashLB {
			return route.DestinationHash(dr, d)
		},
		ServiceHash: func(*model.Service, int) *networking.LoadBalancerSettings_ConsistentHashLB {
			return route.ServiceHash(dr, 9080)
		}}
	vs := &config.Config{Meta: config.Meta{GroupVersionKind: config.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"},
		Name: "reviews", Namespace: "bookinfo", Domain: "cluster.local"},
		Spec: &networking.VirtualService{Hosts: []string{s.Hostname}, Http: []*networking.HTTPRoute{{
			Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: s.Hostname, Subset: "v2"}}},
			Retries: &networking.HTTPRetry{Attempts: 3, RetryOn: "5xx,503,gateway-error"},
		}}}}
	a := actionOf(t, route.BuildRouteConfiguration(9080, []route.ServiceRoutes{{Service: s, VirtualService: vs}}, opts))
	if len(a.HashPolicy) != 1 || a.HashPolicy[0].GetHeader().GetHeaderName() != "x-v2" {
		t.Errorf("hash policy %v, want the subset's x-v2", a.HashPolicy)
	}
	rp := a.GetRetryPolicy()
	if rp.GetRetryOn() != "5xx,gateway-error,retriable-status-codes" || len(rp.GetRetriableStatusCodes()) != 1 || rp.GetRetriableStatusCodes()[0] != 503 ||
		len(rp.GetRetryHostPredicate()) != 0 || rp.GetNumRetries().GetValue() != 3 {
		t.Errorf("retry policy %v", rp)
	}

	// the default route of a service without VirtualService: the rule's
	// hash, retries as ever
	d := actionOf(t, route.BuildRouteConfiguration(9080, []route.ServiceRoutes{{Service: s}}, opts))
	if len(d.HashPolicy) != 1 || d.HashPolicy[0].GetHeader().GetHeaderName() != "x-user" || len(d.GetRetryPolicy().GetRetryHostPredicate()) != 1 {
		t.Errorf("default route %v", d)
	}

	// weighted: zero weights out; the mesh default retry policy applies
	vs.Spec = &networking.VirtualService{Hosts: []string{s.Hostname}, Http: []*networking.HTTPRoute{{
		Route: []*networking.HTTPRouteDestination{
			{Destination: &networking.Destination{Host: s.Hostname, Subset: "v1"}, Weight: 100},
			{Destination: &networking.Destination{Host: s.Hostname, Subset: "v3"}, Weight: 0}}}}}
	opts.Hash, opts.MeshRetry = nil, &networking.HTTPRetry{Attempts: 5, RetryIgnorePreviousHosts: wrapperspb.Bool(false)}
	w := actionOf(t, route.BuildRouteConfiguration(9080, []route.ServiceRoutes{{Service: s, VirtualService: vs}}, opts))
	if n := len(w.GetWeightedClusters().GetClusters()); n != 1 {
		t.Errorf("%d weighted clusters, want 1 (zero weight left out)", n)
	}
	if w.GetRetryPolicy().GetNumRetries().GetValue() != 5 || len(w.GetRetryPolicy().GetRetryHostPredicate()) != 0 {
		t.Errorf("mesh default retries %v", w.GetRetryPolicy())
	}
}
