package generators_test

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// names lists a response's resources, sorted.
func names(r *adsc.Response) []string {
	out := make([]string, 0, len(r.Resources))
	for n := range r.Resources {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// nextEDS skips responses of other types.
func nextEDS(t *testing.T, c *adsc.Client) *adsc.Response {
	t.Helper()
	for {
		if r := xdstest.Next(t, c); r.TypeURL == xds.EndpointType {
			return r
		}
	}
}

// A push that changed one service's endpoints sends that service's load
// assignments only, on state-of-the-world and delta streams alike, as
// Istio's EDS does: the others the proxy holds are not resent, and stay
// (nothing is removed). So does a full push whose only changes are
// services and kinds endpoints do not depend on. A push naming nothing the
// proxy watches sends nothing; one that may change every assignment (a
// DestinationRule, a forced push) sends them all.
func TestEDSPushSendsChangedAssignmentsOnly(t *testing.T) {
	env, idx := bookinfoEnv(t)
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}).Register(s.DS)
	s.DS.InitPushContext(env)
	const (
		reviews = "outbound|9080||reviews.bookinfo.svc.cluster.local"
		details = "outbound|9080||details.bookinfo.svc.cluster.local"
		ratings = "outbound|9090||ratings.bookinfo.svc.cluster.local"
	)
	all := []string{details, reviews, ratings} // sorted
	shard := model.NewShardKey(model.Kubernetes, "Kubernetes")
	var clients []*adsc.Client
	for i, delta := range []bool{false, true} {
		c := xdstest.Dial(t, s, adsc.Config{Delta: delta, Metadata: map[string]any{"NAMESPACE": "bookinfo"},
			NodeID: fmt.Sprintf("sidecar~10.244.1.%d~p%d.bookinfo~bookinfo.svc.cluster.local", i+1, i)})
		if err := c.Watch(xds.EndpointType, all...); err != nil {
			t.Fatal(err)
		}
		if got := names(nextEDS(t, c)); !slices.Equal(got, all) {
			t.Fatalf("delta=%v: first response %v, want %v", delta, got, all)
		}
		clients = append(clients, c)
	}
	push := s.DS.PushFunc(env)
	// expect checks the next response of each client (want[i] nil: none)
	expect := func(step string, want ...[]string) {
		t.Helper()
		for i, c := range clients {
			if want[i] == nil {
				xdstest.NoResponse(t, c)
				continue
			}
			r := nextEDS(t, c)
			if got := names(r); !slices.Equal(got, want[i]) {
				t.Errorf("%s, delta=%v: sent %v, want %v", step, i == 1, got, want[i])
			}
			if len(r.Removed) > 0 {
				t.Errorf("%s, delta=%v: removed %v", step, i == 1, r.Removed)
			}
			if got := c.State(xds.EndpointType); len(got) != len(all) {
				t.Errorf("%s, delta=%v: the client holds %v, want all of %v", step, i == 1, got, all)
			}
			if err := c.ACK(r); err != nil {
				t.Fatal(err)
			}
		}
	}

	// reviews loses an endpoint: an incremental push
	sh, _ := idx.ShardsFor("reviews.bookinfo.svc.cluster.local", "bookinfo")
	eps := sh.Endpoints(shard)
	idx.UpdateServiceEndpoints(shard, "reviews.bookinfo.svc.cluster.local", "bookinfo", eps[:2])
	push(&model.PushRequest{ConfigsUpdated: model.NewConfigKeys(model.ServiceConfigKey("reviews.bookinfo.svc.cluster.local", "bookinfo")),
		Reason: model.NewReasonStats(model.EndpointUpdate)})
	expect("endpoint change of reviews", []string{reviews}, []string{reviews})

	// a full push of a service and a VirtualService: details only (its
	// endpoints are the same: a delta stream is sent nothing)
	push(&model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(
		model.ServiceConfigKey("details.bookinfo.svc.cluster.local", "bookinfo"),
		model.ConfigKey{Kind: kind.VirtualService, Name: "reviews", Namespace: "bookinfo"})})
	expect("service change of details", []string{details}, nil)

	// a service nobody watches: nothing is sent
	push(&model.PushRequest{ConfigsUpdated: model.NewConfigKeys(model.ServiceConfigKey("other.example.com", "bookinfo"))})
	expect("endpoint change of a service not watched", nil, nil)

	// a DestinationRule may change every assignment: all are sent
	// (delta: none changed, so none)
	push(&model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(
		model.ConfigKey{Kind: kind.DestinationRule, Name: "reviews", Namespace: "bookinfo"})})
	expect("DestinationRule change", all, nil)

	// a forced push sends all too
	push(&model.PushRequest{Full: true, Forced: true})
	expect("forced push", all, nil)
}
