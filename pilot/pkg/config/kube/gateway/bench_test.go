package gateway_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// benchSnapshot is 50 Gateways (an HTTP and an HTTPS listener each) and
// 1,000 HTTPRoutes (three rules, two backends) spread over them, with 100
// backend Services and the Gateways' Services with endpoints.
func benchSnapshot(gateways, routes int) gateway.Snapshot {
	s := gateway.Snapshot{Secrets: map[string]map[string][]byte{}}
	all := gatewayv1.NamespacesFromAll
	for i := 0; i < gateways; i++ {
		name := "gw-" + strconv.Itoa(i)
		host := gatewayv1.Hostname("*.example.com")
		s.Gateways = append(s.Gateways, config.Config{
			Meta: config.Meta{GroupVersionKind: gvk.KubernetesGateway, Name: name, Namespace: "edge", Generation: 1},
			Spec: &gatewayv1.GatewaySpec{GatewayClassName: "istio", Listeners: []gatewayv1.Listener{
				{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: &host,
					AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &all}}},
				{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: &host,
					TLS:           &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "missing-cert"}}},
					AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &all}}},
			}},
		})
		s.Services = append(s.Services, gateway.ServiceInfo{Hostname: name + "-istio.edge.svc.cluster.local", Namespace: "edge",
			Name: name + "-istio", Kind: "Service", Type: "LoadBalancer", Ports: []gateway.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}},
			Addresses: []string{"10.0.0." + strconv.Itoa(i)}, ExternalAddresses: []string{"203.0.113." + strconv.Itoa(i)},
			EndpointPorts: map[int][]uint32{80: {8080}, 443: {8443}}})
	}
	for i := 0; i < 100; i++ {
		s.Services = append(s.Services, gateway.ServiceInfo{Hostname: fmt.Sprintf("svc-%d.apps.svc.cluster.local", i), Namespace: "apps",
			Name: "svc-" + strconv.Itoa(i), Kind: "Service", Ports: []gateway.ServicePort{{Name: "http", Port: 80}}})
	}
	ns := gatewayv1.Namespace("edge")
	for i := 0; i < routes; i++ {
		port := gatewayv1.PortNumber(80)
		backend := func(n int, w int32) gatewayv1.HTTPBackendRef {
			return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{Weight: &w, BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: gatewayv1.ObjectName("svc-" + strconv.Itoa(n%100)), Port: &port}}}
		}
		prefix := func(p string) []gatewayv1.HTTPRouteMatch {
			t := gatewayv1.PathMatchPathPrefix
			return []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &t, Value: &p}}}
		}
		s.HTTPRoutes = append(s.HTTPRoutes, config.Config{
			Meta: config.Meta{GroupVersionKind: gvk.HTTPRoute, Name: "route-" + strconv.Itoa(i), Namespace: "apps", Generation: 1,
				CreationTimestamp: time.Unix(int64(i), 0)},
			Spec: &gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{
					{Name: gatewayv1.ObjectName("gw-" + strconv.Itoa(i%gateways)), Namespace: &ns}}},
				Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("r-%d.example.com", i))},
				Rules: []gatewayv1.HTTPRouteRule{
					{Matches: prefix("/api"), BackendRefs: []gatewayv1.HTTPBackendRef{backend(i, 90), backend(i+1, 10)}},
					{Matches: prefix("/static"), BackendRefs: []gatewayv1.HTTPBackendRef{backend(i+2, 1)}},
					{BackendRefs: []gatewayv1.HTTPBackendRef{backend(i+3, 1)}},
				},
			},
		})
	}
	return s
}

// BenchmarkTranslate1000Routes50Gateways is the cost of translating
// everything at once: synthetic objects and every status.
func BenchmarkTranslate1000Routes50Gateways(b *testing.B) {
	snap := benchSnapshot(50, 1000)
	opts := gateway.Options{DomainSuffix: domain}
	var out gateway.Output
	b.ReportAllocs()
	for b.Loop() {
		out = gateway.Translate(snap, opts)
	}
	if len(out.VirtualServices) != 2000 || len(out.Statuses) != 1050 {
		b.Fatalf("%d VirtualServices, %d statuses", len(out.VirtualServices), len(out.Statuses))
	}
}

// BenchmarkSourceInitial1000Routes50Gateways is the cost of the krt source
// building every collection from scratch until synced.
func BenchmarkSourceInitial1000Routes50Gateways(b *testing.B) {
	snap := benchSnapshot(50, 1000)
	b.ReportAllocs()
	for b.Loop() {
		stop := make(chan struct{})
		src := gateway.NewSource(newStaticInputs(snap).inputs(), gateway.SourceOptions{Options: gateway.Options{DomainSuffix: domain}, Stop: stop})
		for !src.HasSynced() || len(src.Statuses().List()) != 1050 || len(src.Output().VirtualServices) != 2000 {
			time.Sleep(100 * time.Microsecond)
		}
		close(stop)
	}
}

// BenchmarkSourceRouteChange is the cost of one route change in a source
// holding 1,000 routes on 50 Gateways: until the route's status and the
// Gateway's attachedRoutes reflect it.
func BenchmarkSourceRouteChange(b *testing.B) {
	snap := benchSnapshot(50, 1000)
	in := newStaticInputs(snap)
	stop := make(chan struct{})
	defer close(stop)
	src := gateway.NewSource(in.inputs(), gateway.SourceOptions{Options: gateway.Options{DomainSuffix: domain}, Stop: stop})
	for !src.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	route := snap.HTTPRoutes[7]
	gwKey := "Gateway/edge/gw-7"
	attached := func() int32 {
		st := src.Statuses().GetKey(gwKey)
		if st == nil {
			return -1
		}
		return st.Status.(*gatewayv1.GatewayStatus).Listeners[0].AttachedRoutes
	}
	for attached() != 20 {
		time.Sleep(time.Millisecond)
	}
	detached := route.DeepCopy()
	detached.Spec.(*gatewayv1.HTTPRouteSpec).ParentRefs[0].SectionName = ptr(gatewayv1.SectionName("https"))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		next, want := detached, int32(19)
		if i%2 == 1 {
			next, want = route, 20
		}
		in.http.Set(next)
		for attached() != want {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

func ptr[T any](v T) *T { return &v }
