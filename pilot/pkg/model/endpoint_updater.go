package model

// EndpointIndexUpdater is the endpoint half of the push engine: it keeps the
// EndpointIndex current from the registries' EDSUpdate and SvcUpdate calls
// and turns each effective endpoint change into a PushRequest for Next —
// incremental (EDS only) when only endpoints changed, full when the service
// is new to the index or its service accounts changed. Everything else is
// passed to Next unchanged.
type EndpointIndexUpdater struct {
	Index *EndpointIndex
	Next  XDSUpdater
}

var _ XDSUpdater = (*EndpointIndexUpdater)(nil)

// NewEndpointIndexUpdater feeds index and forwards to next.
func NewEndpointIndexUpdater(index *EndpointIndex, next XDSUpdater) *EndpointIndexUpdater {
	return &EndpointIndexUpdater{Index: index, Next: next}
}

// EDSUpdate implements XDSUpdater.
func (u *EndpointIndexUpdater) EDSUpdate(shard ShardKey, hostname, namespace string, eps []*IstioEndpoint) {
	pt := u.Index.UpdateServiceEndpoints(shard, hostname, namespace, eps)
	u.push(pt, hostname, namespace)
}

func (u *EndpointIndexUpdater) push(pt PushType, hostname, namespace string) {
	if pt == NoPush {
		return
	}
	u.Next.ConfigUpdate(&PushRequest{
		Full:           pt == FullPush,
		ConfigsUpdated: map[ConfigKey]struct{}{ServiceConfigKey(hostname, namespace): {}},
		Reason:         NewReasonStats(EndpointUpdate),
	})
}

// SvcUpdate implements XDSUpdater: a deleted service loses its endpoints
// from the shard (and is forgotten when no shard is left).
func (u *EndpointIndexUpdater) SvcUpdate(shard ShardKey, hostname, namespace string, event Event) {
	if event == EventDelete {
		u.Index.DeleteServiceShard(shard, hostname, namespace, false)
	}
	u.Next.SvcUpdate(shard, hostname, namespace, event)
}

// ConfigUpdate implements XDSUpdater.
func (u *EndpointIndexUpdater) ConfigUpdate(req *PushRequest) { u.Next.ConfigUpdate(req) }

// ProxyUpdate implements XDSUpdater.
func (u *EndpointIndexUpdater) ProxyUpdate(clusterID, ip string) { u.Next.ProxyUpdate(clusterID, ip) }

// RemoveShard implements XDSUpdater.
func (u *EndpointIndexUpdater) RemoveShard(shard ShardKey) {
	for _, s := range u.Index.DeleteShard(shard) {
		u.push(IncrementalPush, s.Hostname, s.Namespace)
	}
	u.Next.RemoveShard(shard)
}
