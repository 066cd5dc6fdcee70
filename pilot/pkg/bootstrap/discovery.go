package bootstrap

import (
	"fmt"
	"net"
	"net/http"
	"sync"

	"google.golang.org/grpc"

	"github.com/meshplane/istiod/pilot/pkg/credentials"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/pushengine"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// discovery is the xDS half of the server: environment, ADS server, push
// engine and the gRPC listener.
type discovery struct {
	env      *model.Environment
	server   *xds.DiscoveryServer
	engine   *pushengine.Engine
	grpc     *grpc.Server
	listener net.Listener
	jwks     *authn.Resolver
	// authorizationz reports a connected proxy's policies (/debug/authorizationz)
	authorizationz func(proxyID string) (any, bool)
	// telemetryz reports a connected proxy's telemetry (/debug/telemetryz)
	telemetryz func(proxyID string) (any, bool)
}

// initDiscovery wires the push path: config events and registry updates go
// to the push engine, which builds PushContexts and queues connections; a
// workload change goes to that workload's own connections.
func (s *Server) initDiscovery() {
	d := &discovery{}
	// network gateways given by hostname are resolved in the background;
	// a changed answer pushes everyone, as in Istio (unless
	// RESOLVE_HOSTNAME_GATEWAYS=false: then they are left out)
	gatewayResolver := model.NewGatewayResolver(s.args.Multicluster.ResolveHostnameGateways, model.DNSGatewayResolverOptions{Stop: s.internalStop, OnChange: func() {
		d.engine.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.NetworksTrigger)})
	}})
	d.env = model.NewEnvironment(model.EnvironmentOptions{
		ConfigStore:             s.store,
		ServiceDiscovery:        s.services.aggregate,
		Mesh:                    s.mesh.Mesh,
		DomainSuffix:            s.args.Domain,
		EndpointIndex:           s.services.index,
		ScopeGatewayToNamespace: s.args.ScopeGatewayToNamespace,
		HashAllocatedAddresses:  !s.args.IPAllocate.Enabled,
		MeshNetworks:            s.meshNetworks,
		NetworkGateways:         s.services.aggregate,
		GatewayResolver:         gatewayResolver,
	})
	d.server = xds.NewDiscoveryServer()
	d.server.SetPushThrottle(s.args.PushThrottle)
	d.server.SetSendTimeout(s.args.SendTimeout)
	// proxies' labels follow their workloads in the registries
	d.server.SetWorkloadLabeler(s.services.aggregate)
	switch limit := s.args.RequestLimit; {
	case limit == 0:
		d.server.SetRequestLimit(xds.DefaultRequestLimit())
	case limit > 0:
		d.server.SetRequestLimit(limit)
	}
	d.server.SetControlPlane(controlPlaneID(s.args.PodName))
	d.server.SetClusterAliases(s.args.ClusterAliases)
	gens := &generators.SidecarGenerators{Endpoints: s.services.index, Discovery: s.services.aggregate,
		FilterGatewayClusters: s.args.FilterGatewayClusters, SidecarIngressTLS: s.args.SidecarIngressTLS}
	gens.DualStack, gens.IPv4OutboundForIPv6 = s.args.DualStack, s.args.IPv4OutboundForIPv6
	gens.ProtocolFilters = listener.ProtocolFilters{NoMongo: s.args.NoMongoFilter, Redis: s.args.RedisFilter, MySQL: s.args.MySQLFilter}
	// jwksUri keys are fetched in the background and never block a push;
	// new keys push everyone, as in Istio
	d.jwks = authn.NewResolver(authn.ResolverOptions{Metrics: jwksMetrics(), OnChange: func() {
		d.engine.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.GlobalUpdate)})
	}})
	gens.JWKS = d.jwks
	if s.kubeClient != nil {
		// gateway certificates: a Secret change reaches only the gateways
		// whose servers name it
		s.credentials = credentials.NewController(s.kubeClient.Kube())
		gens.Credentials = s.credentials
		s.credentials.AddHandler(func(namespace, name string) {
			d.engine.ConfigUpdate(&model.PushRequest{Full: true, Reason: model.NewReasonStats(model.SecretTrigger),
				ConfigsUpdated: map[model.ConfigKey]struct{}{{Kind: kind.Secret, Namespace: namespace, Name: name}: {}}})
		})
	}
	// config that is never sent, or that proxies reject, is not silent
	s.problems.AddProvider(d.server.Problems)
	// and neither are the policies Istio ignores
	s.problems.AddProvider(model.PolicyProblemSource(d.server.PushContext))
	gens.Register(d.server)
	gens.RegisterGRPC(d.server)
	gens.RegisterSDS(d.server)
	s.problems.AddProvider(gens.GatewayProblems(d.server))
	s.problems.AddProvider(gens.EnvoyFilterProblems(d.server))
	// and neither are Sidecars and Telemetries that do not do what they say
	s.problems.AddProvider(s.analysisProblems)
	d.authorizationz = gens.Authorizationz(d.server)
	d.telemetryz = gens.Telemetryz(d.server)
	push := d.server.PushFunc(d.env)
	d.engine = pushengine.New(pushengine.Options{Debounce: s.args.Debounce, Push: func(req *model.PushRequest) model.PushResult {
		res := push(req)
		if req.Full {
			d.server.PushContext().PolicyProblems() // logs new ones at WARN, sets istiod_policy_ignored
		}
		return res
	}})
	for _, sc := range s.store.Schemas().All() {
		s.store.RegisterEventHandler(sc.GroupVersionKind(), d.engine.ConfigHandler().Handle)
	}
	s.mesh.AddMeshHandler(func() {
		// mesh settings reach every proxy's config: a forced push naming nothing
		d.engine.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.GlobalUpdate)})
	})
	s.services.engine = pushengine.Updater{Engine: d.engine, Proxies: d.server}
	s.initAmbient(d)
	d.grpc = newGRPCServer(d.server, s.args.Keepalive)
	d.server.Register(d.grpc)
	s.discovery = d
}

// startDiscovery binds --grpcAddr and, once every source has synced, builds
// the first PushContext (streams are refused, and /ready fails, until then)
// and starts pushing. The goroutine owns the engine: it returns once the
// engine has stopped, so Shutdown waits for running pushes.
func (s *Server) startDiscovery() error {
	l, err := s.serveGRPC(s.discovery.grpc, s.args.GRPCAddr)
	if err != nil {
		return fmt.Errorf("--grpcAddr %v", err)
	}
	s.discovery.listener = l
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !s.WaitUntilSynced(s.internalStop) {
			return
		}
		s.discovery.server.InitPushContext(s.discovery.env)
		s.discovery.engine.Start(s.internalStop)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.discovery.jwks.Run(s.internalStop)
		}()
		scope.Infof("xDS ready: first push context built")
		<-s.discovery.engine.Done()
	}()
	return nil
}

// GRPCAddr is the bound address of the xDS listener (after Start).
func (s *Server) GRPCAddr() string { return s.discovery.listener.Addr().String() }

// DiscoveryServer returns the ADS server.
func (s *Server) DiscoveryServer() *xds.DiscoveryServer { return s.discovery.server }

// PushEngine returns the push engine.
func (s *Server) PushEngine() *pushengine.Engine { return s.discovery.engine }

// pushzHandler serves the push engine's record.
func (s *Server) pushzHandler() http.HandlerFunc { return s.discovery.engine.PushzHandler() }

// jwksMetrics are the JWKS resolver's counters, registered once per process
// (tests run several servers in one).
var jwksMetrics = sync.OnceValue(func() *authn.ResolverMetrics {
	m, err := authn.NewResolverMetrics(monitoring.Registry)
	if err != nil {
		scope.Errorf("JWKS resolver metrics: %v", err)
	}
	return m
})
