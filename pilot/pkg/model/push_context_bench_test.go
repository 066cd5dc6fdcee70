package model_test

import (
	"fmt"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

const (
	benchServices   = 1000
	benchNamespaces = 50
)

// benchEnv holds 1,000 services in 50 namespaces, each with a
// VirtualService (two routes to subsets) and a DestinationRule (two
// subsets).
func benchEnv(b *testing.B) *pcEnv {
	e := newPCEnv(b)
	for i := range benchServices {
		ns := fmt.Sprintf("ns-%d", i%benchNamespaces)
		name := fmt.Sprintf("svc-%d", i)
		e.addService(svcHost(name, ns), ns, i)
		e.create(kind.VirtualService, ns, name, i, benchVirtualService(name, 90))
		e.create(kind.DestinationRule, ns, name, i, &networking.DestinationRule{Host: name, Subsets: subsets("v1", "v2"),
			TrafficPolicy: lb(networking.LoadBalancerSettings_ROUND_ROBIN)})
	}
	return e
}

func benchVirtualService(name string, weight int32) *networking.VirtualService {
	return &networking.VirtualService{
		Hosts: []string{name},
		Http: []*networking.HTTPRoute{
			{Match: []*networking.HTTPMatchRequest{prefix("/v2")}, Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: name, Subset: "v2"}}}},
			{Route: []*networking.HTTPRouteDestination{
				{Destination: &networking.Destination{Host: name, Subset: "v1"}, Weight: weight},
				{Destination: &networking.Destination{Host: name, Subset: "v2"}, Weight: 100 - weight},
			}},
		},
	}
}

// BenchmarkInitContextFull builds a snapshot from scratch.
func BenchmarkInitContextFull(b *testing.B) {
	e := benchEnv(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		model.InitContext(e.env, nil, nil)
	}
}

// BenchmarkInitContextVirtualServiceUpdate rebuilds after one
// VirtualService changed: the VirtualService index (re-deriving only the
// changed object), the sidecar index and the route checks; every other
// index is shared.
func BenchmarkInitContextVirtualServiceUpdate(b *testing.B) {
	e := benchEnv(b)
	old := model.InitContext(e.env, nil, nil)
	e.update(kind.VirtualService, "ns-7", "svc-7", benchVirtualService("svc-7", 50))
	req := pcFull(pcKey(kind.VirtualService, "ns-7", "svc-7"))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		model.InitContext(e.env, old, req)
	}
}

// BenchmarkDefaultSidecarScope computes the default scope of one namespace
// (1,000 visible services, VirtualServices and DestinationRules) on a fresh
// snapshot.
func BenchmarkDefaultSidecarScope(b *testing.B) {
	e := benchEnv(b)
	old := model.InitContext(e.env, nil, nil)
	req := pcFull(pcKey(kind.Sidecar, "ns-0", "none"))
	proxy := sidecarProxy("ns-0", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		model.InitContext(e.env, old, req).SidecarScope(proxy)
	}
}

// BenchmarkProxyNeedsPush decides one VirtualService key for a sidecar
// whose scope is already computed.
func BenchmarkProxyNeedsPush(b *testing.B) {
	e := benchEnv(b)
	p := model.InitContext(e.env, nil, nil)
	proxy := sidecarProxy("ns-0", nil)
	req := pcFull(pcKey(kind.VirtualService, "ns-7", "svc-7"))
	req.Push = p
	p.SidecarScope(proxy)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		model.ProxyNeedsPush(proxy, req)
	}
}
