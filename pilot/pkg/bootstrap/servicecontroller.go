package bootstrap

import (
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/aggregate"
	kuberegistry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
)

// pushRecordLimit bounds the requests kept by the recorder that stands in
// for the push engine.
const pushRecordLimit = 1000

// serviceControllers are the service registries, joined, and the endpoint
// index they feed.
type serviceControllers struct {
	index *model.EndpointIndex
	// pushes records what the registries ask of the push engine; it is the
	// push engine's place holder until that exists.
	pushes         *model.RecordingXDSUpdater
	kube           *kuberegistry.Controller // nil without a cluster
	serviceEntries *serviceentry.Controller
	aggregate      *aggregate.Controller
	// engine is the push engine, set once it exists; registry updates are
	// recorded and forwarded to it.
	engine model.XDSUpdater
	// updater is what registries report to: the endpoint index, then the
	// recorder and the engine
	updater model.XDSUpdater
}

// teeUpdater records every update and forwards it to the push engine once
// it exists.
type teeUpdater struct{ sc *serviceControllers }

func (t teeUpdater) next() model.FanOut {
	if t.sc.engine == nil {
		return model.FanOut{t.sc.pushes}
	}
	return model.FanOut{t.sc.pushes, t.sc.engine}
}

func (t teeUpdater) EDSUpdate(shard model.ShardKey, h, ns string, eps []*model.IstioEndpoint) {
	t.next().EDSUpdate(shard, h, ns, eps)
}

func (t teeUpdater) SvcUpdate(shard model.ShardKey, h, ns string, e model.Event) {
	t.next().SvcUpdate(shard, h, ns, e)
}

func (t teeUpdater) ConfigUpdate(req *model.PushRequest) { t.next().ConfigUpdate(req) }
func (t teeUpdater) ProxyUpdate(cluster, ip string)      { t.next().ProxyUpdate(cluster, ip) }
func (t teeUpdater) RemoveShard(shard model.ShardKey)    { t.next().RemoveShard(shard) }

// Services implements debug.RegistryDebugSource.
func (c *serviceControllers) Services() []*model.Service { return c.aggregate.Services() }

// EndpointIndex implements debug.RegistryDebugSource.
func (c *serviceControllers) EndpointIndex() *model.EndpointIndex { return c.index }

// HasSynced reports whether every registry has read its initial state.
func (c *serviceControllers) HasSynced() bool { return c.aggregate.HasSynced() }

// initServiceControllers builds the registries: Kubernetes when a cluster
// is configured, ServiceEntry always (from the aggregate config store), and
// their join. They start with the kube client and the store.
func (s *Server) initServiceControllers() error {
	sc := &serviceControllers{index: model.NewEndpointIndex(), pushes: model.NewRecordingXDSUpdater(pushRecordLimit)}
	updater := model.NewEndpointIndexUpdater(sc.index, teeUpdater{sc})
	sc.updater = updater
	trustDomain := s.mesh.Mesh().GetTrustDomain()
	var regs []aggregate.Registry
	if s.kubeClient != nil && hasRegistry(s.args.Registries, "Kubernetes") {
		opts := kuberegistry.Options{
			ClusterID:       s.args.ClusterID,
			DomainSuffix:    s.args.Domain,
			TrustDomain:     trustDomain,
			SystemNamespace: s.args.Namespace,
			ConfigCluster:   true,
			MeshNetworks:    s.meshNetworks(),
			// PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API=false
			NoGatewayAPINetworks: !s.args.Multicluster.DiscoverGatewayAPINetworks,
			XDSUpdater:           updater,
			Problems:             s.problems,
			Krt:                  s.krtDebug,
			Stop:                 s.internalStop,
		}
		if s.nsFilter != nil {
			opts.NamespaceFilter = s.nsFilter
		}
		kr, err := kuberegistry.NewController(s.kubeClient, opts)
		if err != nil {
			return err
		}
		sc.kube = kr
		regs = append(regs, kr)
	}
	seOpts := serviceentry.Options{
		ClusterID:   s.args.ClusterID,
		TrustDomain: trustDomain,
		XDSUpdater:  updater,
		// PILOT_ENABLE_IP_AUTOALLOCATE=false: Istio's older hashed addresses
		HashAllocate: !s.args.IPAllocate.Enabled,
		Problems:     s.problems,
		Krt:          s.krtDebug,
		Stop:         s.internalStop,
	}
	if sc.kube != nil {
		seOpts.Workloads = sc.kube.Workloads()
	}
	sc.serviceEntries = serviceentry.NewController(s.store, seOpts)
	if sc.kube != nil && s.args.Multicluster.SelectWorkloadEntries {
		// Services select the config cluster's WorkloadEntries
		sc.kube.SelectWorkloadEntries(sc.serviceEntries.WorkloadEntryInstances())
	}
	regs = append(regs, sc.serviceEntries)
	sc.aggregate = aggregate.New(regs...)
	s.problems.AddProvider(sc.aggregate.Conflicts)
	s.mesh.AddMeshHandler(func() {
		td := s.mesh.Mesh().GetTrustDomain()
		if sc.kube != nil {
			sc.kube.SetTrustDomain(td)
		}
		sc.serviceEntries.SetTrustDomain(td)
	})
	if s.networks != nil {
		s.networks.AddNetworksHandler(func() { sc.networksChanged(s.networks.Networks()) })
	}
	s.services = sc
	return nil
}

// meshNetworks is the current meshNetworks (nil without a watcher).
func (s *Server) meshNetworks() *meshconfig.MeshNetworks {
	if s.networks == nil {
		return nil
	}
	return s.networks.Networks()
}

// networksChanged hands a new meshNetworks to every Kubernetes registry
// (their endpoints' networks and gateways are derived again) and pushes
// every proxy, as Istio reloads on a meshNetworks change.
func (c *serviceControllers) networksChanged(mn *meshconfig.MeshNetworks) {
	for _, r := range c.aggregate.Registries() {
		if k, ok := r.(interface {
			SetMeshNetworks(*meshconfig.MeshNetworks)
		}); ok {
			k.SetMeshNetworks(mn)
		}
	}
	c.updater.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.NetworksTrigger)})
}

// ServiceDiscovery returns the joined service registries.
func (s *Server) ServiceDiscovery() *aggregate.Controller { return s.services.aggregate }

// EndpointIndex returns the endpoint index the registries feed.
func (s *Server) EndpointIndex() *model.EndpointIndex { return s.services.index }

// XDSUpdates returns the recorder of what the registries ask of the push
// engine (the last pushRecordLimit calls), until the push engine exists.
func (s *Server) XDSUpdates() *model.RecordingXDSUpdater { return s.services.pushes }
