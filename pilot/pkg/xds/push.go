package xds

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// pushCounter numbers push versions within the process.
var pushCounter atomic.Int64

// pushVersion is the version a snapshot's responses carry: a time stamp and a
// counter, monotonic within the process.
func pushVersion(now time.Time) string {
	return now.UTC().Format(time.RFC3339) + "/" + strconv.FormatInt(pushCounter.Add(1), 10)
}

// PushFunc is the push engine's per-push callback: it builds the next
// PushContext (reusing the indexes a request does not touch), installs it,
// and queues every connection the request concerns.
func (s *DiscoveryServer) PushFunc(env *model.Environment) func(*model.PushRequest) PushResult {
	return func(req *model.PushRequest) PushResult {
		var old *model.PushContext
		if ps := s.push.Load(); ps != nil {
			old = ps.ctx
		}
		pc := old
		if req.Full || old == nil {
			t0 := time.Now()
			pc = model.InitContext(env, old, req)
			RecordPushContextInit(time.Since(t0))
			s.SetPushContext(pc, pushVersion(time.Now()))
		}
		r := *req
		r.Push = pc
		n := 0
		for _, c := range s.Connections() {
			if r.Forced || model.ProxyNeedsPush(c.proxy, &r) {
				c.enqueue(&r)
				n++
			}
		}
		return PushResult{ProxiesPushed: n, IndexesRebuilt: pc.Rebuilt, IndexesReused: pc.Reused}
	}
}

// InitPushContext builds the first snapshot, after which streams are served.
func (s *DiscoveryServer) InitPushContext(env *model.Environment) {
	pc := model.InitContext(env, nil, &model.PushRequest{Full: true, Forced: true})
	s.SetPushContext(pc, pushVersion(time.Now()))
}

// EngineUpdater is the end of the registries' XDSUpdater chain: push requests
// go to the push engine.
type EngineUpdater struct {
	Engine *PushEngine
}

var _ model.XDSUpdater = EngineUpdater{}

// ConfigUpdate implements model.XDSUpdater.
func (u EngineUpdater) ConfigUpdate(req *model.PushRequest) { u.Engine.ConfigUpdate(req) }

// EDSUpdate implements model.XDSUpdater; the endpoint index updater in front
// of this one has already turned it into a ConfigUpdate.
func (u EngineUpdater) EDSUpdate(model.ShardKey, string, string, []*model.IstioEndpoint) {}

// SvcUpdate implements model.XDSUpdater; registries request the push through
// ConfigUpdate.
func (u EngineUpdater) SvcUpdate(model.ShardKey, string, string, model.Event) {}

// ProxyUpdate implements model.XDSUpdater: the workload behind a proxy
// changed, which may change its inbound config.
func (u EngineUpdater) ProxyUpdate(string, string) {
	u.Engine.ConfigUpdate(&model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ProxyUpdate)})
}

// RemoveShard implements model.XDSUpdater.
func (u EngineUpdater) RemoveShard(model.ShardKey) {}
