package pushengine

import "github.com/meshplane/istiod/pilot/pkg/model"

// ProxyPusher pushes the connections of one workload from the current
// snapshot (the xDS server).
type ProxyPusher interface {
	ProxyUpdate(clusterID, ip string) int
}

// Updater is the end of the registries' XDSUpdater chain: config pushes go
// to the engine, a workload change goes straight to that workload's own
// connections (Proxies), without a new PushContext.
type Updater struct {
	Engine *Engine
	// Proxies receives ProxyUpdate (nil: workload changes push nothing).
	Proxies ProxyPusher
}

var _ model.XDSUpdater = Updater{}

// ConfigUpdate implements model.XDSUpdater.
func (u Updater) ConfigUpdate(req *model.PushRequest) { u.Engine.ConfigUpdate(req) }

// EDSUpdate implements model.XDSUpdater; the endpoint index updater in front
// of this one has already turned it into a ConfigUpdate.
func (u Updater) EDSUpdate(model.ShardKey, string, string, []*model.IstioEndpoint) {}

// SvcUpdate implements model.XDSUpdater; registries request the push through
// ConfigUpdate.
func (u Updater) SvcUpdate(model.ShardKey, string, string, model.Event) {}

// ProxyUpdate implements model.XDSUpdater: the workload behind a proxy
// changed, which may change its own inbound config and nobody else's.
// Istio's istiod does the same: it pushes that connection only.
func (u Updater) ProxyUpdate(clusterID, ip string) {
	if u.Proxies == nil {
		return
	}
	RecordInboundUpdate(InboundConfig)
	RecordPushTriggers(model.NewReasonStats(model.ProxyUpdate))
	u.Proxies.ProxyUpdate(clusterID, ip)
}

// RemoveShard implements model.XDSUpdater.
func (u Updater) RemoveShard(model.ShardKey) {}
