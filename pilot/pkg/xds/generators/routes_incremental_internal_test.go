package generators

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// services is a fixed registry.
type services []*model.Service

func (s services) Services() []*model.Service { return s }
func (s services) GetService(h string) *model.Service {
	for _, svc := range s {
		if svc.Hostname == h {
			return svc
		}
	}
	return nil
}
func (s services) GetProxyServiceTargets(*model.ProxyQuery) []model.ServiceTarget { return nil }

func httpService(name, ns string, vip int, ports ...int) *model.Service {
	svc := &model.Service{Hostname: name + "." + ns + ".svc.cluster.local", DefaultAddress: "10.96.0." + strconv.Itoa(vip),
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"Kubernetes": {"10.96.0." + strconv.Itoa(vip)}}},
		Attributes:  model.ServiceAttributes{Name: name, Namespace: ns, ServiceRegistry: model.Kubernetes}}
	for _, p := range ports {
		svc.Ports = append(svc.Ports, &model.Port{Name: "http-" + strconv.Itoa(p), Port: p, Protocol: protocol.HTTP})
	}
	return svc
}

// routesMesh exercises what virtual hosts depend on: VirtualService
// features (regex and header matches, faults, CORS, mirrors, retries,
// weights, rewrites, redirects, direct responses), sourceLabels, a
// delegate, port-less destinations (service lookups), consistent hashes
// of DestinationRules (one with a workload selector), and a regex RE2
// rejects (its configuration is held).
const routesMesh = `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: rich, namespace: a}
spec:
  hosts: [svc-0.a.svc.cluster.local]
  http:
  - match:
    - uri: {regex: "/api/v[0-9]+/.*"}
      headers: {x-user: {exact: jason}, x-trace: {prefix: abc}}
      withoutHeaders: {x-skip: {exact: "1"}}
      queryParams: {q: {exact: "1"}}
    fault: {delay: {percentage: {value: 10}, fixedDelay: 2s}, abort: {percentage: {value: 5}, httpStatus: 503}}
    corsPolicy: {allowOrigins: [{exact: "https://x.example"}], allowMethods: [GET], maxAge: 60s}
    mirror: {host: svc-3.a.svc.cluster.local}
    mirrorPercentage: {value: 25}
    retries: {attempts: 4, perTryTimeout: 1s, retryOn: 5xx}
    headers: {request: {set: {x-a: b}, add: {x-c: d}, remove: [x-e]}, response: {set: {x-f: g}}}
    timeout: 3s
    rewrite: {uri: /v2/}
    route:
    - destination: {host: svc-1.a.svc.cluster.local, subset: v1}
      weight: 70
    - destination: {host: svc-1.a.svc.cluster.local, subset: v2}
      weight: 30
  - match: [{uri: {prefix: /old}}]
    redirect: {uri: /new, authority: svc-0.a.svc.cluster.local, redirectCode: 302}
  - match: [{uri: {exact: /teapot}}]
    directResponse: {status: 418, body: {string: short and stout}}
  - route:
    - destination: {host: svc-2.b.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: labels, namespace: b}
spec:
  hosts: [svc-0.b.svc.cluster.local]
  http:
  - match: [{sourceLabels: {app: x}}]
    route: [{destination: {host: svc-1.b.svc.cluster.local}}]
  - route: [{destination: {host: svc-1.a.svc.cluster.local}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: root, namespace: a}
spec:
  hosts: [svc-2.a.svc.cluster.local]
  http:
  - match: [{uri: {prefix: /child}}]
    delegate: {name: child, namespace: a}
  - route: [{destination: {host: svc-2.a.svc.cluster.local}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: child, namespace: a}
spec:
  http:
  - route: [{destination: {host: svc-3.a.svc.cluster.local, port: {number: 8080}}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bad, namespace: c}
spec:
  hosts: [svc-bad.c.svc.cluster.local]
  http:
  # on 9090 only: on port 80 Istio gives every VirtualService a host
  - match: [{uri: {regex: "/(?=look)ahead"}, port: 9090}]
    route: [{destination: {host: svc-bad.c.svc.cluster.local}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: svc-1, namespace: a}
spec:
  host: svc-1.a.svc.cluster.local
  trafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user}}}
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: svc-1-x, namespace: b}
spec:
  host: svc-1.b.svc.cluster.local
  workloadSelector: {matchLabels: {app: x}}
  trafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true}}}
`

func routesProxy(t *testing.T, ns, app string, n int) *model.Proxy {
	t.Helper()
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": ns, "LABELS": map[string]any{"app": app}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ParseServiceNodeWithMetadata(fmt.Sprintf("sidecar~10.0.2.%d~%s-%d.%s~%s.svc.cluster.local", n, app, n, ns, ns), md)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// routesEnv is routesMesh in a store, with its services and sidecars of
// every namespace.
func routesEnv(t *testing.T) (model.ConfigStore, *model.Environment, services, []*model.Proxy) {
	t.Helper()
	store := memory.New(collections.Pilot)
	for _, d := range crd.Parse([]byte(routesMesh), crd.Options{Domain: "cluster.local"}) {
		if d.Err != nil {
			t.Fatalf("%s: %v", d.Where(), d.Err)
		}
		if _, err := store.Create(*d.Config); err != nil {
			t.Fatal(err)
		}
	}
	reg := services{httpService("svc-0", "a", 1, 80), httpService("svc-1", "a", 2, 80), httpService("svc-2", "a", 3, 80),
		httpService("svc-3", "a", 4, 80, 8080), httpService("svc-0", "b", 5, 80), httpService("svc-1", "b", 6, 80),
		httpService("svc-2", "b", 7, 80), httpService("svc-0", "c", 8, 80), httpService("svc-bad", "c", 9, 9090)}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: reg})
	proxies := []*model.Proxy{routesProxy(t, "a", "x", 1), routesProxy(t, "a", "y", 2), routesProxy(t, "b", "x", 3),
		routesProxy(t, "b", "y", 4), routesProxy(t, "c", "x", 5)}
	return store, env, reg, proxies
}

// sameAsFullBuild fails unless got is the full build's want, to the byte.
func sameAsFullBuild(t *testing.T, proxy string, got, want xds.Generated) {
	t.Helper()
	if len(got.Resources) != len(want.Resources) || len(got.Held) != len(want.Held) {
		t.Fatalf("%s: %d resources and %v held, want %d and %v", proxy, len(got.Resources), got.Held, len(want.Resources), want.Held)
	}
	for i, r := range want.Resources {
		if got.Resources[i].Name != r.Name || got.Resources[i].Version != r.Version || !bytes.Equal(got.Resources[i].Resource.Value, r.Resource.Value) {
			t.Errorf("%s: route configuration %s differs from a full build", proxy, r.Name)
		}
	}
	for i, h := range want.Held {
		if got.Held[i] != h {
			t.Errorf("%s: held %v, want %v", proxy, got.Held[i], h)
		}
	}
}

// After a VirtualService change only the virtual hosts of its host are
// built again, and every configuration is still the one built whole from
// scratch; a forced push builds them all.
func TestRoutesRebuildOnlyChangedVirtualHosts(t *testing.T) {
	store, env, reg, proxies := routesEnv(t)
	g := &SidecarGenerators{Discovery: reg}
	w := &xds.WatchedResource{TypeURL: xds.RouteType, ResourceNames: map[string]struct{}{"80": {}, "8080": {}, "9090": {}}}

	// generate checks every proxy's configurations against a full build
	// from scratch and returns how many virtual hosts that built; gets
	// is how many it looked up by key
	var gets int64
	generate := func(push *model.PushContext) int64 {
		t.Helper()
		before, getsBefore := g.vhosts.builds.Load(), g.vhosts.gets.Load()
		defer func() { gets = g.vhosts.gets.Load() - getsBefore }()
		for _, p := range proxies {
			got, err := g.routes(p, w, &model.PushRequest{Full: true, Push: push})
			if err != nil {
				t.Fatal(err)
			}
			full := &SidecarGenerators{Discovery: reg, fullRoutes: true}
			want, _ := full.routes(p, w, &model.PushRequest{Full: true, Push: push})
			sameAsFullBuild(t, p.ID, got, want)
		}
		return g.vhosts.builds.Load() - before
	}
	change := func(old *model.PushContext, k kind.Kind, name, ns string) *model.PushContext {
		return model.InitContext(env, old, &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: k, Name: name, Namespace: ns})})
	}
	update := func(g config.GroupVersionKind, name, ns string, edit func(config.Spec)) {
		t.Helper()
		c := store.Get(g, name, ns).DeepCopy()
		edit(c.Spec)
		if _, err := store.Update(c); err != nil {
			t.Fatal(err)
		}
	}

	p1 := model.InitContext(env, nil, nil)
	first := generate(p1)
	firstGets := gets
	if first == 0 {
		t.Fatal("no virtual host built: nothing was assembled")
	}
	if n := generate(p1); n != 0 {
		t.Errorf("the same snapshot built %d virtual hosts again", n)
	}
	// the held configuration of port 9090 is that of a full build
	if out, _ := g.routes(proxies[0], w, &model.PushRequest{Full: true, Push: p1}); len(out.Held) != 1 || out.Held[0].Name != "9090" {
		t.Fatalf("held %v, want 9090", out.Held)
	}

	update(gvk.VirtualService, "labels", "b", func(s config.Spec) {
		s.(*networking.VirtualService).Http[1].Route[0].Destination.Host = "svc-2.a.svc.cluster.local"
	})
	p2 := change(p1, kind.VirtualService, "labels", "b")
	// svc-0.b:80, the edited host, as namespace b (its own) and the others
	// see it, each with the sourceLabels match selected or not: 4 virtual
	// hosts; and svc-2.a:80, whose root VirtualService is merged with its
	// delegate again on every VirtualService change (a new spec): 2
	if n := generate(p2); n != 6 {
		t.Errorf("a VirtualService change built %d virtual hosts, want 6 (of %d)", n, first)
	}
	// the others come from each configuration's last assembly, without a
	// lookup by key: only the two edited hosts of each are looked up
	if gets >= firstGets/2 {
		t.Errorf("a VirtualService change looked up %d virtual hosts by key, of %d the first time", gets, firstGets)
	}

	update(gvk.DestinationRule, "svc-1", "a", func(s config.Spec) {
		s.(*networking.DestinationRule).TrafficPolicy.LoadBalancer = nil
	})
	p3 := change(p2, kind.DestinationRule, "svc-1", "a")
	if n := generate(p3); n == 0 || n >= first {
		t.Errorf("a DestinationRule change built %d virtual hosts, want some of %d", n, first)
	}

	p4 := model.InitContext(env, p3, &model.PushRequest{Full: true, Forced: true})
	if n := generate(p4); n != first {
		t.Errorf("a forced push built %d virtual hosts, want all %d", n, first)
	}
	// a connection still finishing a push of an older snapshot builds
	// without the cache (each configuration its own hosts, none shared),
	// and gets what a full build gives
	if n := generate(p1); n <= first {
		t.Errorf("an older snapshot built %d virtual hosts, want more than the %d the cache shares", n, first)
	}
	if n := generate(p4); n != 0 {
		t.Errorf("the newest snapshot built %d virtual hosts again after an older one was served", n)
	}
}

// Sidecars of every scope generating at once, on a new snapshot and on the
// one before, share the cache safely and each get the full build's bytes.
func TestRoutesAssembledConcurrently(t *testing.T) {
	store, env, reg, proxies := routesEnv(t)
	g := &SidecarGenerators{Discovery: reg}
	full := &SidecarGenerators{Discovery: reg, fullRoutes: true}
	w := &xds.WatchedResource{TypeURL: xds.RouteType, ResourceNames: map[string]struct{}{"80": {}, "8080": {}, "9090": {}}}
	p1 := model.InitContext(env, nil, nil)
	c := store.Get(gvk.VirtualService, "rich", "a").DeepCopy()
	c.Spec.(*networking.VirtualService).Http[0].Timeout = nil
	if _, err := store.Update(c); err != nil {
		t.Fatal(err)
	}
	p2 := model.InitContext(env, p1, &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: kind.VirtualService, Name: "rich", Namespace: "a"})})
	type result struct {
		proxy     *model.Proxy
		push      *model.PushContext
		got, want xds.Generated
	}
	results := make(chan result)
	var wg sync.WaitGroup
	for range 3 {
		for _, push := range []*model.PushContext{p1, p2} {
			for _, p := range proxies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, _ := g.routes(p, w, &model.PushRequest{Full: true, Push: push})
					want, _ := full.routes(p, w, &model.PushRequest{Full: true, Push: push})
					results <- result{p, push, got, want}
				}()
			}
		}
	}
	go func() { wg.Wait(); close(results) }()
	for r := range results {
		sameAsFullBuild(t, r.proxy.ID+"@"+strconv.FormatUint(r.push.Seq(), 10), r.got, r.want)
	}
}

// A route configuration assembled again after one VirtualService changed
// looks up only that host's virtual host: the others, each with its own
// VirtualService, come from the last assembly, and the result is what a
// full build gives.
func TestAssemblyTakesUnchangedHosts(t *testing.T) {
	store := memory.New(collections.Pilot)
	var reg services
	vs := func(host string, attempts int32) *networking.VirtualService {
		return &networking.VirtualService{Hosts: []string{host}, Http: []*networking.HTTPRoute{{
			Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host}}},
			Retries: &networking.HTTPRetry{Attempts: attempts}}}}
	}
	for i := range 5 {
		name := fmt.Sprintf("svc-%d", i)
		reg = append(reg, httpService(name, "a", i+1, 80))
		storePut(t, store, gvk.VirtualService, "a", name, vs(name+".a.svc.cluster.local", 1))
	}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: reg})
	g := &SidecarGenerators{Discovery: reg}
	w := &xds.WatchedResource{TypeURL: xds.RouteType, ResourceNames: map[string]struct{}{"80": {}}}
	proxy := routesProxy(t, "a", "x", 1)
	generate := func(push *model.PushContext) (gets, builds int64) {
		t.Helper()
		g0, b0 := g.vhosts.gets.Load(), g.vhosts.builds.Load()
		got, err := g.routes(proxy, w, &model.PushRequest{Full: true, Push: push})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := (&SidecarGenerators{Discovery: reg, fullRoutes: true}).routes(proxy, w, &model.PushRequest{Full: true, Push: push})
		sameAsFullBuild(t, proxy.ID, got, want)
		return g.vhosts.gets.Load() - g0, g.vhosts.builds.Load() - b0
	}
	p1 := model.InitContext(env, nil, nil)
	if gets, builds := generate(p1); gets != 5 || builds != 5 {
		t.Fatalf("first assembly: %d lookups, %d builds, want 5 and 5", gets, builds)
	}
	storePut(t, store, gvk.VirtualService, "a", "svc-2", vs("svc-2.a.svc.cluster.local", 3))
	p2 := model.InitContext(env, p1, &model.PushRequest{Full: true,
		ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: kind.VirtualService, Name: "svc-2", Namespace: "a"})})
	if gets, builds := generate(p2); gets != 1 || builds != 1 {
		t.Errorf("after one VirtualService changed: %d lookups, %d builds, want 1 and 1", gets, builds)
	}
	// a Sidecar change carries nothing over
	p3 := model.InitContext(env, p2, &model.PushRequest{Full: true,
		ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: kind.Sidecar, Name: "s", Namespace: "a"})})
	if gets, _ := generate(p3); gets != 5 {
		t.Errorf("after a Sidecar change: %d lookups, want all 5", gets)
	}
}
