package generators_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// A snapshot fetched while the control plane pushes (a ServiceEntry with a
// new HTTP port every few tens of milliseconds: each push brings a
// listener, and so a route configuration, the fetch has not asked for
// yet) is complete: every route configuration its listeners name and every
// load assignment its EDS clusters name is in it, as Envoy would end up
// holding. A fetch that asked once per type returned listeners naming
// routes it never asked for when a push came between its requests.
func TestFetchCompleteDuringPushes(t *testing.T) {
	env, idx, registry := bookinfoEnvWithEntries(t)
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}).Register(s.DS)
	s.DS.InitPushContext(env)
	proxy := adsc.Config{NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": "bookinfo", "LABELS": map[string]any{"app": "productpage", "version": "v1"}}}

	store := env.ConfigStore()
	next := 0
	// burst writes n entries, one every few tens of milliseconds, each
	// pushed as the push engine would push it
	burst := func(n int) {
		for range n {
			time.Sleep(30 * time.Millisecond)
			i := next
			next++
			since := registry.Seq()
			se := &networking.ServiceEntry{Hosts: []string{fmt.Sprintf("churn-%d.example.com", i)},
				Ports:      []*networking.ServicePort{{Number: uint32(20000 + i), Name: "http", Protocol: "HTTP"}},
				Resolution: networking.ServiceEntry_DNS, Location: networking.ServiceEntry_MESH_EXTERNAL}
			cfg := config.Config{Meta: config.Meta{GroupVersionKind: gvk.ServiceEntry, Name: fmt.Sprintf("churn-%d", i),
				Namespace: "bookinfo", Domain: "cluster.local"}, Spec: se}
			if _, err := store.Create(cfg); err != nil {
				t.Error(err)
				return
			}
			updated := registryKeys(registry, since)
			updated[model.ConfigKey{Kind: kindOf(gvk.ServiceEntry), Name: cfg.Name, Namespace: cfg.Namespace}] = struct{}{}
			s.DS.PushFunc(env)(&model.PushRequest{Full: true, ConfigsUpdated: updated})
		}
	}

	for range 5 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			burst(10)
		}()
		snap, err := adsc.Fetch(context.Background(), s.Addr, proxy)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range namedRoutes(snap) {
			if snap["rds"][name] == nil {
				t.Errorf("listeners name route configuration %s, the snapshot has none (it has %d)", name, len(snap["rds"]))
			}
		}
	}
}

// namedRoutes are the route configurations a snapshot's listeners name.
func namedRoutes(snap adsc.Snapshot) []string {
	var out []string
	for _, m := range snap["lds"] {
		l := m.(*listenerv3.Listener)
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				h := &hcm.HttpConnectionManager{}
				if f.GetTypedConfig().MessageIs(h) && f.GetTypedConfig().UnmarshalTo(h) == nil && h.GetRds() != nil {
					out = append(out, h.GetRds().GetRouteConfigName())
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
