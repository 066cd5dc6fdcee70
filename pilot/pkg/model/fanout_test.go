package model_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// Every call reaches each updater of a FanOut, in order.
func TestFanOut(t *testing.T) {
	a, b := model.NewRecordingXDSUpdater(0), model.NewRecordingXDSUpdater(0)
	f := model.FanOut{a, b}
	shard := model.NewShardKey(model.Kubernetes, "c1")
	f.EDSUpdate(shard, "h", "ns", nil)
	f.SvcUpdate(shard, "h", "ns", model.EventAdd)
	f.ConfigUpdate(&model.PushRequest{Full: true})
	f.ProxyUpdate("c1", "10.0.0.1")
	f.RemoveShard(shard)
	want := []model.XDSEventType{model.XDSEventEDS, model.XDSEventService, model.XDSEventConfig, model.XDSEventProxy, model.XDSEventRemoveShard}
	for _, r := range []*model.RecordingXDSUpdater{a, b} {
		got := r.Events()
		if len(got) != len(want) {
			t.Fatalf("%d events, want %d", len(got), len(want))
		}
		for i, e := range got {
			if e.Type != want[i] {
				t.Errorf("event %d: %s, want %s", i, e.Type, want[i])
			}
		}
	}
}
