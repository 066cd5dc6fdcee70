package bootstrap

import (
	"net"
	"net/http"

	"google.golang.org/grpc"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// discovery is the xDS half of the server: environment, ADS server, push
// engine and the gRPC listener.
type discovery struct {
	env      *model.Environment
	server   *xds.DiscoveryServer
	engine   *xds.PushEngine
	grpc     *grpc.Server
	listener net.Listener
}

// initDiscovery wires the push path: config events and registry updates go
// to the push engine, which builds PushContexts and queues connections.
func (s *Server) initDiscovery() {
	d := &discovery{}
	d.env = model.NewEnvironment(model.EnvironmentOptions{
		ConfigStore:      s.store,
		ServiceDiscovery: s.services.aggregate,
		Mesh:             s.mesh.Mesh,
		DomainSuffix:     s.args.Domain,
		EndpointIndex:    s.services.index,
	})
	d.server = xds.NewDiscoveryServer()
	d.server.SetPushThrottle(s.args.PushThrottle)
	gens := &xds.SidecarGenerators{Endpoints: s.services.index, Discovery: s.services.aggregate, Invalid: &xds.InvalidResources{}}
	// config that is never sent, or that proxies reject, is not silent
	s.problems.AddProvider(gens.Invalid.Problems)
	s.problems.AddProvider(d.server.RejectedConfig)
	gens.Register(d.server)
	gens.RegisterGRPC(d.server)
	d.engine = xds.NewPushEngine(xds.PushEngineOptions{Debounce: s.args.Debounce, Push: d.server.PushFunc(d.env)})
	for _, sc := range s.store.Schemas().All() {
		s.store.RegisterEventHandler(sc.GroupVersionKind(), d.engine.ConfigHandler().Handle)
	}
	s.mesh.AddMeshHandler(func() {
		// mesh settings reach every proxy's config: a forced push naming nothing
		d.engine.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.GlobalUpdate)})
	})
	s.services.engine = xds.EngineUpdater{Engine: d.engine}
	d.grpc = newGRPCServer(s.args.Keepalive)
	d.server.Register(d.grpc)
	s.discovery = d
}

// startDiscovery binds --grpcAddr and, once every source has synced, builds
// the first PushContext (streams are refused until then) and starts pushing.
func (s *Server) startDiscovery() error {
	l, err := s.serveGRPC(s.discovery.grpc, s.args.GRPCAddr)
	if err != nil {
		return err
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
		scope.Infof("xDS ready: first push context built")
	}()
	return nil
}

// GRPCAddr is the bound address of the xDS listener (after Start).
func (s *Server) GRPCAddr() string { return s.discovery.listener.Addr().String() }

// DiscoveryServer returns the ADS server.
func (s *Server) DiscoveryServer() *xds.DiscoveryServer { return s.discovery.server }

// debugHandlers are the xDS debug endpoints.
func (s *Server) debugHandlers() map[string]http.HandlerFunc {
	d := s.discovery
	return map[string]http.HandlerFunc{
		"adsz":        d.server.AdszHandler,
		"syncz":       d.server.SynczHandler,
		"connections": d.server.ConnectionsHandler,
		"pushz":       d.engine.PushzHandler(),
		"push_status": d.server.PushStatusHandler,
		"pushcontext": d.server.PushContextHandler,
		"config_dump": d.server.ConfigDumpHandler,
		"edsz":        d.server.EdszHandler,
	}
}
