package xds

import (
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// PushFunc is the push engine's per-push callback: it builds the next
// PushContext (reusing the indexes a request does not touch), installs it,
// and queues every connection the request concerns.
func (s *DiscoveryServer) PushFunc(env *model.Environment) func(*model.PushRequest) model.PushResult {
	return func(req *model.PushRequest) model.PushResult {
		old := s.PushContext()
		pc := old
		if req.Full || old == nil {
			t0 := time.Now()
			pc = model.InitContext(env, old, req)
			RecordPushContextInit(time.Since(t0))
			s.SetPushContext(pc)
			recordSnapshot(pc)
		}
		r := *req
		r.Push = pc
		n := 0
		conns := s.Connections()
		if r.Full && !r.Forced && len(r.ConfigsUpdated) > 0 {
			// ProxyNeedsPush reads each proxy's scope in this snapshot
			proxies := make([]*model.Proxy, 0, len(conns))
			for _, c := range conns {
				proxies = append(proxies, c.Proxy())
			}
			pc.WarmSidecarScopes(proxies)
		}
		for _, c := range conns {
			if r.Forced || model.ProxyNeedsPush(c.Proxy(), &r) {
				c.enqueue(&r)
				n++
			}
		}
		return model.PushResult{ProxiesPushed: n, IndexesRebuilt: pc.Rebuilt, IndexesReused: pc.Reused}
	}
}

// InitPushContext builds the first snapshot, after which streams are served.
func (s *DiscoveryServer) InitPushContext(env *model.Environment) {
	pc := model.InitContext(env, nil, &model.PushRequest{Full: true, Forced: true})
	s.SetPushContext(pc)
	recordSnapshot(pc)
}

// recordSnapshot sets the gauges that describe the current snapshot.
func recordSnapshot(pc *model.PushContext) {
	SetServiceCount(pc.ServiceCount())
	SetVirtualServiceCount(len(pc.VirtualServices()))
}

// ProxyUpdate pushes the connections of the workload with this IP (in
// cluster clusterID; any cluster when the proxy does not say) from the
// current snapshot: the workload's own config (its labels, and with them
// the policies that select it; its inbound listeners and clusters) follows
// the registries, and nothing else changed, so no new PushContext is built
// and no other proxy is pushed. Each connection's proxy is rebuilt with the
// workload's labels as the registry has them now, as Istio recomputes them
// on a proxy update. It returns the number of connections queued; a
// workload that is not connected here costs nothing.
func (s *DiscoveryServer) ProxyUpdate(clusterID, ip string) int {
	pc := s.PushContext()
	if pc == nil {
		return 0 // not serving yet: the first push covers it
	}
	n := 0
	for _, c := range s.Connections() {
		p := c.Proxy()
		if !p.HasIP(ip) {
			continue
		}
		if cid := p.ClusterID(); cid != "" && clusterID != "" && cid != clusterID {
			continue
		}
		c.proxy.Store(s.withWorkload(p, c.nodeLocality))
		c.enqueue(&model.PushRequest{Full: true, Forced: true, Push: pc, Start: time.Now(),
			Reason: model.NewReasonStats(model.ProxyUpdate)})
		n++
	}
	return n
}
