package model_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

var shard = model.NewShardKey(model.Kubernetes, "c1")

func ep(addr, sa string, health model.HealthStatus) *model.IstioEndpoint {
	return &model.IstioEndpoint{Addresses: []string{addr}, ServicePortName: "http", EndpointPort: 80,
		ServiceAccount: sa, HealthStatus: health}
}

func TestShardKeyString(t *testing.T) {
	if got := shard.String(); got != "Kubernetes/c1" {
		t.Fatal(got)
	}
}

func TestUpdateServiceEndpointsPushTypes(t *testing.T) {
	x := model.NewEndpointIndex()
	steps := []struct {
		name string
		eps  []*model.IstioEndpoint
		want model.PushType
	}{
		{"new service", []*model.IstioEndpoint{ep("1.1.1.1", "sa", model.Healthy)}, model.FullPush},
		{"same endpoints", []*model.IstioEndpoint{ep("1.1.1.1", "sa", model.Healthy)}, model.NoPush},
		{"scale up, same identity", []*model.IstioEndpoint{ep("1.1.1.1", "sa", model.Healthy), ep("1.1.1.2", "sa", model.Healthy)}, model.IncrementalPush},
		{"health change", []*model.IstioEndpoint{ep("1.1.1.1", "sa", model.Healthy), ep("1.1.1.2", "sa", model.UnHealthy)}, model.IncrementalPush},
		{"new unhealthy endpoint not sent", []*model.IstioEndpoint{ep("1.1.1.1", "sa", model.Healthy), ep("1.1.1.2", "sa", model.UnHealthy),
			ep("1.1.1.3", "sa", model.UnHealthy)}, model.NoPush},
		{"new identity", []*model.IstioEndpoint{ep("1.1.1.1", "sa", model.Healthy), ep("1.1.1.4", "other", model.Healthy)}, model.FullPush},
		{"scale down, identity gone", []*model.IstioEndpoint{ep("1.1.1.1", "sa", model.Healthy)}, model.FullPush},
		{"scale to zero", nil, model.FullPush},
		{"back: the service is still known", []*model.IstioEndpoint{ep("1.1.1.1", "", model.Healthy)}, model.IncrementalPush},
	}
	for _, s := range steps {
		if got := x.UpdateServiceEndpoints(shard, "a.example", "ns", s.eps); got != s.want {
			t.Fatalf("%s: %v, want %v", s.name, got, s.want)
		}
	}
}

func TestShardsAndServiceAccounts(t *testing.T) {
	x := model.NewEndpointIndex()
	other := model.NewShardKey(model.External, "c1")
	x.UpdateServiceEndpoints(shard, "a.example", "ns", []*model.IstioEndpoint{ep("1.1.1.1", "sa1", model.Healthy)})
	x.UpdateServiceEndpoints(other, "a.example", "ns", []*model.IstioEndpoint{ep("2.2.2.2", "sa2", model.Healthy)})
	s, ok := x.ShardsFor("a.example", "ns")
	if !ok {
		t.Fatal("no shards")
	}
	if sas := s.ServiceAccounts(); len(sas) != 2 || sas[0] != "sa1" || sas[1] != "sa2" {
		t.Fatalf("service accounts: %v", sas)
	}
	view := x.Snapshot()["a.example"]["ns"]
	if len(view.Shards["Kubernetes/c1"]) != 1 || len(view.Shards["External/c1"]) != 1 || len(view.ServiceAccounts) != 2 {
		t.Fatalf("snapshot: %+v", view)
	}
	if hit := x.DeleteShard(other); len(hit) != 1 || hit[0].Hostname != "a.example" {
		t.Fatalf("delete shard: %v", hit)
	}
	if sas := s.ServiceAccounts(); len(sas) != 1 {
		t.Fatalf("after delete shard: %v", sas)
	}
	if pt := x.DeleteServiceShard(shard, "a.example", "ns", false); pt != model.FullPush {
		t.Fatalf("delete: %v", pt)
	}
	if _, ok := x.ShardsFor("a.example", "ns"); ok {
		t.Fatal("service kept without preserveKeys")
	}
	if pt := x.DeleteServiceShard(shard, "a.example", "ns", false); pt != model.NoPush {
		t.Fatalf("second delete: %v", pt)
	}
}

// The updater turns index results into push requests keyed by ServiceEntry.
func TestEndpointIndexUpdater(t *testing.T) {
	rec := model.NewRecordingXDSUpdater(0)
	u := model.NewEndpointIndexUpdater(model.NewEndpointIndex(), rec)
	u.EDSUpdate(shard, "a.example", "ns", []*model.IstioEndpoint{ep("1.1.1.1", "", model.Healthy)})
	u.EDSUpdate(shard, "a.example", "ns", []*model.IstioEndpoint{ep("1.1.1.1", "", model.Healthy)})
	u.EDSUpdate(shard, "a.example", "ns", []*model.IstioEndpoint{ep("1.1.1.1", "", model.Healthy), ep("1.1.1.2", "", model.Healthy)})
	u.SvcUpdate(shard, "a.example", "ns", model.EventDelete)
	u.ProxyUpdate("c1", "1.1.1.1")
	ev := rec.Events()
	if len(ev) != 4 {
		t.Fatalf("events: %+v", ev)
	}
	key := model.ServiceConfigKey("a.example", "ns")
	if !ev[0].Push.Full || ev[1].Push.Full || !ev[1].Push.Reason.Has(model.EndpointUpdate) {
		t.Fatalf("pushes: %+v %+v", ev[0].Push, ev[1].Push)
	}
	if _, ok := ev[1].Push.ConfigsUpdated[key]; !ok || key.Kind.String() != "ServiceEntry" {
		t.Fatalf("key: %v", ev[1].Push.ConfigsUpdated)
	}
	if ev[2].Type != model.XDSEventService || ev[3].Type != model.XDSEventProxy {
		t.Fatalf("forwarded: %+v", ev[2:])
	}
	if _, ok := u.Index.ShardsFor("a.example", "ns"); ok {
		t.Fatal("a deleted service keeps its endpoints")
	}
}

func TestRecordingLimitAndWait(t *testing.T) {
	rec := model.NewRecordingXDSUpdater(2)
	for i := 0; i < 5; i++ {
		rec.ProxyUpdate("c", "ip")
	}
	if ev := rec.Events(); len(ev) != 2 || ev[0].Seq != 4 {
		t.Fatalf("limit: %+v", ev)
	}
	seq := rec.Seq()
	go rec.RemoveShard(shard)
	e, ok := rec.WaitFor(make(chan struct{}), seq, func(e model.XDSEvent) bool { return e.Type == model.XDSEventRemoveShard })
	if !ok || e.Shard != shard {
		t.Fatalf("wait: %+v", e)
	}
	closed := make(chan struct{})
	close(closed)
	if _, ok := rec.WaitFor(closed, rec.Seq(), func(model.XDSEvent) bool { return true }); ok {
		t.Fatal("wait after stop")
	}
}
