package xds_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pkg/diag"
)

const (
	clusterA = "outbound|80||a.default.svc.cluster.local"
	clusterB = "outbound|80||b.default.svc.cluster.local"
)

// waitProblems polls the server's problems until ok accepts them.
func waitProblems(t *testing.T, s *server, what string, ok func([]diag.Problem) bool) []diag.Problem {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ps := s.DS.Problems()
		if ok(ps) {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: problems %+v", what, ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A resource that fails validation is neither sent nor removed: a delta
// client keeps its copy (no removal), a state-of-the-world client is sent
// its last valid copy again (leaving a cluster out would delete it), and
// /debug/warningz says so for as long as a connected proxy holds it, not
// only until some newer snapshot appears.
func TestHeldResourcesStayWithTheProxy(t *testing.T) {
	s := newServer(t, true)
	sotw := dial(t, s, adsc.Config{})
	delta := dial(t, s, adsc.Config{Delta: true, NodeID: "sidecar~10.0.0.2~app-2.default~default.svc.cluster.local"})
	for _, c := range []*adsc.Client{sotw, delta} {
		if err := c.Watch(xds.ClusterType); err != nil {
			t.Fatal(err)
		}
		if r := next(t, c); len(r.Resources) != 2 {
			t.Fatalf("initial CDS %v", r.Resources)
		}
	}
	before := proto.Clone(sotw.Resource(xds.ClusterType, clusterB))

	s.world.setInvalid(map[string]string{clusterB: "invalid Cluster.LbPolicy"})
	s.DS.Push(&model.PushRequest{Full: true})
	r := next(t, sotw)
	if len(r.Resources) != 2 || !proto.Equal(r.Resources[clusterB], before) {
		t.Errorf("SotW push while b is invalid: %v (b must be its last valid copy)", r.Resources)
	}
	noResponse(t, delta) // nothing changed that it may be sent, nothing removed
	if got := delta.State(xds.ClusterType); len(got) != 2 {
		t.Errorf("delta client holds %v, want both clusters", got)
	}
	ps := waitProblems(t, s, "held b listed", func(ps []diag.Problem) bool { return len(ps) == 1 })
	if ps[0].Subject != "cds "+clusterB || !strings.HasPrefix(ps[0].Message, "2 proxies hold cds "+clusterB) ||
		!strings.Contains(ps[0].Message, "invalid Cluster.LbPolicy") {
		t.Errorf("problem %+v", ps[0])
	}

	// a newer snapshot that is not pushed to them changes nothing they hold
	s.DS.SetPushContext(model.NewPushContext())
	if ps := s.DS.Problems(); len(ps) != 1 {
		t.Errorf("after a newer snapshot that was not pushed: %+v", ps)
	}

	// valid again: sent, and the problem goes
	s.world.setInvalid(nil)
	s.DS.Push(&model.PushRequest{Full: true})
	next(t, sotw)
	waitProblems(t, s, "fixed b no longer listed", func(ps []diag.Problem) bool { return len(ps) == 0 })
}

// A named (EDS) resource held before the client ever got it is not
// reported removed either: it exists, it is only not sendable.
func TestHeldNamedResourceIsNotRemoved(t *testing.T) {
	s := newServer(t, true)
	s.world.setInvalid(map[string]string{clusterA: "bad"})
	c := dial(t, s, adsc.Config{Delta: true})
	if err := c.Watch(xds.EndpointType, clusterA, clusterB); err != nil {
		t.Fatal(err)
	}
	r := next(t, c)
	if len(r.Resources) != 1 || r.Resources[clusterB] == nil || len(r.Removed) != 0 {
		t.Fatalf("EDS %v, removed %v", r.Resources, r.Removed)
	}
}
