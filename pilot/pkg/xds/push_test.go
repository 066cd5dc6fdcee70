package xds_test

import (
	"sync"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// A workload change pushes that workload's own connections from the
// current snapshot, and nobody else: no PushContext is built, and a
// workload that is not connected here costs nothing. (Before, every pod
// change was a full push of every type to every proxy.)
func TestProxyUpdatePushesOnlyThatWorkload(t *testing.T) {
	s := newServer(t, true)
	pc := s.DS.PushContext()
	one := dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.1~app-1.default~default.svc.cluster.local"})
	two := dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.2~app-2.default~default.svc.cluster.local"})
	for _, c := range []*adsc.Client{one, two} {
		if err := c.Watch(xds.ClusterType); err != nil {
			t.Fatal(err)
		}
		next(t, c)
	}
	if n := s.DS.ProxyUpdate("Kubernetes", "10.0.0.9"); n != 0 {
		t.Errorf("a pod that is no proxy queued %d connections", n)
	}
	if n := s.DS.ProxyUpdate("Kubernetes", "10.0.0.2"); n != 1 {
		t.Errorf("queued %d connections, want 1", n)
	}
	if r := next(t, two); r.TypeURL != xds.ClusterType || r.Version != pc.PushVersion() {
		t.Errorf("pushed %s at %s, want cds from the current snapshot %s", r.TypeURL, r.Version, pc.PushVersion())
	}
	noResponse(t, one)
	if s.DS.PushContext() != pc {
		t.Error("a workload change built a new push context")
	}
	// a proxy of another cluster with the same IP is not this workload
	three := dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.3~app-3.default~default.svc.cluster.local",
		Metadata: map[string]any{"CLUSTER_ID": "remote"}})
	if err := three.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	next(t, three)
	if n := s.DS.ProxyUpdate("Kubernetes", "10.0.0.3"); n != 0 {
		t.Errorf("a workload of cluster Kubernetes pushed a proxy of cluster remote (%d)", n)
	}
}

// Content and version come from one snapshot: a request carrying an older
// snapshot than the current one is generated from the current one, whose
// version the response carries.
func TestResponseVersionMatchesItsContent(t *testing.T) {
	s := newServer(t, true)
	var mu sync.Mutex
	var seen *model.PushContext
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(func(p *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
		mu.Lock()
		seen = req.Push
		mu.Unlock()
		return s.world.cds(p, w, req)
	}))
	c := dial(t, s, adsc.Config{})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	next(t, c)
	old := s.DS.PushContext()
	newer := model.NewPushContext()
	s.DS.SetPushContext(newer)
	s.DS.Push(&model.PushRequest{Full: true, Push: old})
	r := next(t, c)
	mu.Lock()
	defer mu.Unlock()
	if r.Version != seen.PushVersion() || seen != newer {
		t.Errorf("response version %s, generated from the snapshot of version %s (current %s)", r.Version, seen.PushVersion(), newer.PushVersion())
	}
}

// pilot_services and pilot_virt_services describe the current snapshot.
func TestSnapshotGauges(t *testing.T) {
	s := newServer(t, false)
	env := model.NewEnvironment(model.EnvironmentOptions{ServiceDiscovery: staticServices{&model.Service{Hostname: "a.default.svc.cluster.local",
		Attributes: model.ServiceAttributes{Namespace: "default"}}}})
	s.DS.InitPushContext(env)
	if got := gauge(t, "pilot_services"); got != 1 {
		t.Errorf("pilot_services %v, want 1", got)
	}
	if got := gauge(t, "pilot_virt_services"); got != 0 {
		t.Errorf("pilot_virt_services %v, want 0", got)
	}
}

type staticServices []*model.Service

func (s staticServices) Services() []*model.Service { return s }
func (s staticServices) GetService(h string) *model.Service {
	for _, svc := range s {
		if string(svc.Hostname) == h {
			return svc
		}
	}
	return nil
}
func (staticServices) GetProxyServiceTargets(*model.ProxyQuery) []model.ServiceTarget { return nil }

func gauge(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
