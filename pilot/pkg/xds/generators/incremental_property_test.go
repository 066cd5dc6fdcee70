package generators_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// checkEvery is how many events pass between two comparisons; propertySeeds
// is how many random sequences run.
var checkEvery, propertySeeds = 10, 4

// What a sidecar holds after any sequence of config events, each pushed
// incrementally (the push context rebuilt from the last one, only the
// changed kind's indexes anew; the generators' caches warm from every
// earlier push), is what a fresh server builds whole from the final
// config: clusters, listeners and routes, to the field. Random sequences
// of VirtualService, DestinationRule, PeerAuthentication,
// AuthorizationPolicy and ServiceEntry events (the ServiceEntry registry's
// pushes merged in, as the push engine merges them), checked every few
// events; and a state-of-the-world sidecar of the same workload that watches
// one route configuration only does not change what a new connection gets.
func TestIncrementalPushesEqualFullBuild(t *testing.T) {
	for seed := range uint64(propertySeeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			env, idx, registry := bookinfoEnvWithEntries(t)
			gens := func() *generators.SidecarGenerators {
				return &generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}
			}
			s := xdstest.NewServer(t)
			gens().Register(s.DS)
			s.DS.InitPushContext(env)
			proxy := adsc.Config{Delta: true, NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
				Metadata: map[string]any{"NAMESPACE": "bookinfo", "LABELS": map[string]any{"app": "productpage", "version": "v1"}}}
			live := xdstest.Dial(t, s, proxy)
			xdstest.WatchInTurn(t, live, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType})
			routes := follow(t, live, nil)
			// a state-of-the-world sidecar of the same workload that
			// watches one route configuration only (a proxy whose other
			// listeners are still warming): the others are generated for
			// nobody until a fresh client asks
			sotw := proxy
			sotw.Delta = false
			partial := xdstest.Dial(t, s, sotw)
			xdstest.WatchInTurn(t, partial, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType},
				xdstest.Watch{Type: xds.RouteType, Names: []string{"9080"}})

			rng := rand.New(rand.NewPCG(seed, 28))
			for step := 1; step <= 40; step++ {
				since := registry.Seq()
				key := randomEvent(t, rng, env.ConfigStore())
				t.Logf("step %d: %v", step, key)
				updated := map[model.ConfigKey]struct{}{key: {}}
				if key.Kind == kind.ServiceEntry {
					// the push engine merges the store's event with the
					// registry's (its services, keyed by host)
					awaitEntries(t, env)
					for k := range registryKeys(registry, since) {
						updated[k] = struct{}{}
					}
				}
				s.DS.PushFunc(env)(&model.PushRequest{Full: true, ConfigsUpdated: updated})
				routes = follow(t, live, routes)
				drain(partial)
				if step%checkEvery != 0 {
					continue
				}
				fresh := xdstest.NewServer(t)
				gens().Register(fresh.DS)
				fresh.DS.InitPushContext(env)
				want, err := adsc.Fetch(context.Background(), fresh.Addr, proxy)
				if err != nil {
					t.Fatal(err)
				}
				// a push still on its way (a loaded machine) is waited for
				diffs := heldDifferences(live, want)
				for try := 0; len(diffs) > 0 && try < 5; try++ {
					time.Sleep(200 * time.Millisecond)
					routes = follow(t, live, routes)
					diffs = heldDifferences(live, want)
				}
				for _, d := range diffs {
					t.Errorf("after %d events (the last %v): %s", step, key, d)
				}
				// a new connection to the server that lived through the
				// events gets what a fresh server sends
				got, err := adsc.Fetch(context.Background(), s.Addr, sotw)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range snapshotDiffs(got, want) {
					t.Errorf("after %d events (the last %v), a new connection: %s", step, key, d)
				}
			}
		})
	}
}

// bookinfoEnvWithEntries is bookinfo's environment with the ServiceEntry
// registry running on its store beside the Kubernetes services.
// The registry's pushes are recorded.
func bookinfoEnvWithEntries(t *testing.T) (*model.Environment, *model.EndpointIndex, *model.RecordingXDSUpdater) {
	t.Helper()
	env, idx := bookinfoEnv(t)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	rec := model.NewRecordingXDSUpdater(0)
	se := serviceentry.NewController(env.ConfigStore().(model.ConfigStoreController), serviceentry.Options{
		XDSUpdater: model.NewEndpointIndexUpdater(idx, rec), Stop: stop})
	disc := withEntries{ServiceDiscovery: env.ServiceDiscovery(), entries: se}
	out := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: env.ConfigStore(), ServiceDiscovery: disc, EndpointIndex: idx})
	awaitEntries(t, out) // the entries of the mesh's file
	return out, idx, rec
}

// registryKeys are the config keys the registry pushed after seq,
// waiting a moment for its push (none comes for an entry that changed no
// service).
func registryKeys(rec *model.RecordingXDSUpdater, seq uint64) map[model.ConfigKey]struct{} {
	stop := make(chan struct{})
	time.AfterFunc(time.Second, func() { close(stop) })
	rec.WaitFor(stop, seq, func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig })
	out := map[model.ConfigKey]struct{}{}
	for _, e := range rec.Since(seq) {
		if e.Type == model.XDSEventConfig {
			for k := range e.Push.ConfigsUpdated {
				out[k] = struct{}{}
			}
		}
	}
	return out
}

// withEntries adds the ServiceEntry registry's services to a discovery.
type withEntries struct {
	model.ServiceDiscovery
	entries *serviceentry.Controller
}

func (d withEntries) Services() []*model.Service {
	return append(slices.Clone(d.ServiceDiscovery.Services()), d.entries.Services()...)
}

func (d withEntries) GetService(h string) *model.Service {
	if s := d.ServiceDiscovery.GetService(h); s != nil {
		return s
	}
	return d.entries.GetService(h)
}

// awaitEntries waits until the registry's services are those of the
// store's ServiceEntries (the registry follows the store's events on its
// own goroutine).
func awaitEntries(t *testing.T, env *model.Environment) {
	t.Helper()
	want := map[string]bool{}
	for _, c := range env.ConfigStore().List(gvk.ServiceEntry, "") {
		se := c.Spec.(*networking.ServiceEntry)
		want[fmt.Sprint(se.Hosts[0], se.Ports[0].Number, se.Ports[0].Protocol)] = true
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]bool{}
		for _, s := range env.ServiceDiscovery().Services() {
			if s.Attributes.ServiceRegistry == model.External {
				for _, p := range s.Ports {
					got[fmt.Sprint(s.Hostname, p.Port, p.Protocol)] = true
				}
			}
		}
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ServiceEntry registry has %v, the store %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// follow reads what the server sends until it is quiet, subscribing to
// the route configurations the listeners name as they change, as Envoy
// does; it returns the names subscribed.
func follow(t *testing.T, c *adsc.Client, routes []string) []string {
	t.Helper()
	for {
		for {
			if _, err := c.Next(100 * time.Millisecond); err != nil {
				if !strings.HasPrefix(err.Error(), "no response within") {
					t.Fatal(err)
				}
				break
			}
		}
		names := c.RouteConfigNames()
		if strings.Join(names, ",") == strings.Join(routes, ",") {
			return routes
		}
		if err := c.Watch(xds.RouteType, names...); err != nil {
			t.Fatal(err)
		}
		if gone := slices.DeleteFunc(slices.Clone(routes), func(n string) bool { return slices.Contains(names, n) }); len(gone) > 0 {
			if err := c.Unwatch(xds.RouteType, gone...); err != nil {
				t.Fatal(err)
			}
		}
		routes = names
	}
}

// heldDifferences compares the clusters, listeners and routes a client
// holds with a snapshot.
func heldDifferences(c *adsc.Client, want adsc.Snapshot) []string {
	var out []string
	for short, typ := range map[string]string{"cds": xds.ClusterType, "lds": xds.ListenerType, "rds": xds.RouteType} {
		held := map[string]bool{}
		for _, n := range c.State(typ) {
			held[n] = true
			w, ok := want[short][n]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s %s: held, not in a full build", short, n))
			case !proto.Equal(c.Resource(typ, n), w):
				g, _ := protojson.Marshal(c.Resource(typ, n))
				b, _ := protojson.Marshal(w)
				out = append(out, fmt.Sprintf("%s %s differs:\n  incremental %s\n  full        %s", short, n, clip(g), clip(b)))
			}
		}
		for n := range want[short] {
			if !held[n] {
				out = append(out, fmt.Sprintf("%s %s: in a full build, not held", short, n))
			}
		}
	}
	return out
}

// drain reads what the server sends until it is quiet.
func drain(c *adsc.Client) {
	for {
		if _, err := c.Next(50 * time.Millisecond); err != nil {
			return
		}
	}
}

// snapshotDiffs compares two fetched snapshots, endpoints aside.
func snapshotDiffs(got, want adsc.Snapshot) []string {
	var out []string
	for _, short := range []string{"cds", "lds", "rds"} {
		for n, g := range got[short] {
			w, ok := want[short][n]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s %s: sent, not in a full build", short, n))
			case !proto.Equal(g, w):
				gj, _ := protojson.Marshal(g)
				wj, _ := protojson.Marshal(w)
				out = append(out, fmt.Sprintf("%s %s differs:\n  sent %s\n  full %s", short, n, clip(gj), clip(wj)))
			}
		}
		for n := range want[short] {
			if _, ok := got[short][n]; !ok {
				out = append(out, fmt.Sprintf("%s %s: in a full build, not sent", short, n))
			}
		}
	}
	sort.Strings(out)
	return out
}

func clip(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

var bookinfoHosts = []string{"productpage", "details", "reviews", "ratings"}

// randomEvent creates, replaces or deletes one object of a random kind in
// the store and returns its key.
func randomEvent(t *testing.T, rng *rand.Rand, store model.ConfigStore) model.ConfigKey {
	t.Helper()
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	var cfg config.Config
	switch rng.IntN(6) {
	case 0, 1:
		host := pick(bookinfoHosts)
		vs := &networking.VirtualService{Hosts: []string{host}}
		for range 1 + rng.IntN(2) {
			r := &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: pick(bookinfoHosts)}}}}
			if rng.IntN(2) == 0 {
				r.Match = []*networking.HTTPMatchRequest{{IgnoreUriCase: rng.IntN(2) == 0,
					Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: fmt.Sprintf("/p%d", rng.IntN(3))}}}}
			}
			if rng.IntN(3) == 0 {
				r.Timeout = durationpb.New(time.Duration(1+rng.IntN(3)) * time.Second)
			}
			vs.Http = append(vs.Http, r)
		}
		cfg = config.Config{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: fmt.Sprintf("vs-%d", rng.IntN(3))}, Spec: vs}
	case 2:
		dr := &networking.DestinationRule{Host: pick(bookinfoHosts), TrafficPolicy: &networking.TrafficPolicy{}}
		if rng.IntN(2) == 0 {
			dr.TrafficPolicy.Tls = &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}
		}
		if rng.IntN(2) == 0 {
			dr.TrafficPolicy.ConnectionPool = &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRetries: int32(1 + rng.IntN(4))}}
		}
		for i := range rng.IntN(3) {
			dr.Subsets = append(dr.Subsets, &networking.Subset{Name: fmt.Sprintf("v%d", i+1), Labels: map[string]string{"version": fmt.Sprintf("v%d", i+1)}})
		}
		cfg = config.Config{Meta: config.Meta{GroupVersionKind: gvk.DestinationRule, Name: fmt.Sprintf("dr-%d", rng.IntN(2))}, Spec: dr}
	case 3:
		modes := []security.PeerAuthentication_MutualTLS_Mode{security.PeerAuthentication_MutualTLS_STRICT,
			security.PeerAuthentication_MutualTLS_PERMISSIVE, security.PeerAuthentication_MutualTLS_DISABLE}
		pa := &security.PeerAuthentication{Mtls: &security.PeerAuthentication_MutualTLS{Mode: modes[rng.IntN(len(modes))]}}
		if rng.IntN(2) == 0 {
			pa.Selector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "productpage"}}
			pa.PortLevelMtls = map[uint32]*security.PeerAuthentication_MutualTLS{9080: {Mode: modes[rng.IntN(len(modes))]}}
		}
		cfg = config.Config{Meta: config.Meta{GroupVersionKind: gvk.PeerAuthentication, Name: fmt.Sprintf("pa-%d", rng.IntN(2))}, Spec: pa}
	case 5:
		// an external host on a port bookinfo's services share or not
		protos := []string{"HTTP", "TCP", "HTTPS"}
		p := protos[rng.IntN(len(protos))]
		n := rng.IntN(3) // one host per entry: two entries of a host make one service
		se := &networking.ServiceEntry{Hosts: []string{fmt.Sprintf("ext-%d.example.com", n)},
			Ports:      []*networking.ServicePort{{Number: []uint32{80, 9080, 443}[rng.IntN(3)], Name: strings.ToLower(p) + "-ext", Protocol: p}},
			Resolution: networking.ServiceEntry_DNS, Location: networking.ServiceEntry_MESH_EXTERNAL}
		cfg = config.Config{Meta: config.Meta{GroupVersionKind: gvk.ServiceEntry, Name: fmt.Sprintf("se-%d", n)}, Spec: se}
	default:
		ap := &security.AuthorizationPolicy{Rules: []*security.Rule{{From: []*security.Rule_From{{Source: &security.Source{
			Principals: []string{"cluster.local/ns/bookinfo/sa/" + pick(bookinfoHosts)}}}}}}}
		if rng.IntN(2) == 0 {
			ap.Action = security.AuthorizationPolicy_DENY
		}
		if rng.IntN(2) == 0 {
			ap.Selector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "productpage"}}
		}
		cfg = config.Config{Meta: config.Meta{GroupVersionKind: gvk.AuthorizationPolicy, Name: fmt.Sprintf("ap-%d", rng.IntN(2))}, Spec: ap}
	}
	cfg.Namespace, cfg.Domain = "bookinfo", "cluster.local"
	k := model.ConfigKey{Kind: kindOf(cfg.GroupVersionKind), Name: cfg.Name, Namespace: cfg.Namespace}
	cur := store.Get(cfg.GroupVersionKind, cfg.Name, cfg.Namespace)
	var err error
	switch {
	case cur == nil:
		_, err = store.Create(cfg)
	case rng.IntN(5) == 0:
		err = store.Delete(cfg.GroupVersionKind, cfg.Name, cfg.Namespace, nil)
	default:
		cfg.ResourceVersion = cur.ResourceVersion
		_, err = store.Update(cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func kindOf(g config.GroupVersionKind) kind.Kind {
	switch g {
	case gvk.VirtualService:
		return kind.VirtualService
	case gvk.DestinationRule:
		return kind.DestinationRule
	case gvk.PeerAuthentication:
		return kind.PeerAuthentication
	case gvk.ServiceEntry:
		return kind.ServiceEntry
	default:
		return kind.AuthorizationPolicy
	}
}
