package generators_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// What a sidecar holds after any sequence of config events, each pushed
// incrementally (the push context rebuilt from the last one, only the
// changed kind's indexes anew; the generators' caches warm from every
// earlier push), is what a fresh server builds whole from the final
// config: clusters, listeners and routes, to the field. Random sequences
// of VirtualService, DestinationRule, PeerAuthentication,
// AuthorizationPolicy and Sidecar events, checked every few events.
func TestIncrementalPushesEqualFullBuild(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			env, idx := bookinfoEnv(t)
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

			rng := rand.New(rand.NewPCG(seed, 28))
			for step := 1; step <= 40; step++ {
				key := randomEvent(t, rng, env.ConfigStore())
				s.DS.PushFunc(env)(&model.PushRequest{Full: true, ConfigsUpdated: map[model.ConfigKey]struct{}{key: {}}})
				routes = follow(t, live, routes)
				if step%10 != 0 {
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
			}
		})
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
	switch rng.IntN(5) {
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
	default:
		return kind.AuthorizationPolicy
	}
}
