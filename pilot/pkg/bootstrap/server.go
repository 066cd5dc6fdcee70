package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/autoregistration"
	"github.com/meshplane/istiod/pilot/pkg/config/aggregate"
	"github.com/meshplane/istiod/pilot/pkg/config/file"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/credentials"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	xdsdebug "github.com/meshplane/istiod/pilot/pkg/xds/debug"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/mesh/kubemesh"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/pkg/kube/multicluster"
	"github.com/meshplane/istiod/pkg/kube/namespace"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/memrelease"
)

var scope = log.RegisterScope("bootstrap", "server wiring")

// Server is a running control plane.
type Server struct {
	args PilotArgs

	// internalStop ends everything the server started; closed by Shutdown.
	internalStop chan struct{}
	stopOnce     sync.Once

	problems *diag.Board
	krtDebug *krt.DebugHandler

	kubeClient kube.Client // nil without a cluster
	nsFilter   *namespace.DiscoveryFilter
	secure     *secure
	meshCM     *kubemesh.ConfigMapSource
	sharedCM   *kubemesh.ConfigMapSource
	// namespaceSynced reports the namespace informer's sync (nil without a cluster)
	namespaceSynced func() bool
	// credentials are the Secrets gateways name (nil without a cluster)
	credentials *credentials.Controller

	store     *aggregate.Store
	services  *serviceControllers
	discovery *discovery
	mesh      *mesh.Watcher
	networks  *mesh.NetworksWatcher

	httpServer       *http.Server
	monitoringServer *http.Server
	httpListener     net.Listener
	monitorListener  net.Listener
	webhooks         *webhooks  // --httpsAddr (webhooks.go)
	injection        *injection // sidecar injector (inject.go); nil without one
	// gatewayStatus elects the writer of Gateway API status (gatewayapi.go)
	gatewayStatus *leaderelection.Election
	// gatewayDeployment elects the generator of Gateways' Deployments,
	// Services and ServiceAccounts (gatewaydeployment.go)
	gatewayDeployment *leaderelection.Election
	// lastGood elects the writer of the last-good record (lastgood.go)
	lastGood *leaderelection.Election
	// ipAllocate elects the writer of ServiceEntry addresses (ipallocate.go)
	ipAllocate *leaderelection.Prioritized
	// revisions follows the cluster's default revision for every
	// prioritized election (revisions.go)
	revisions     *leaderelection.DefaultRevisionWatcher
	revisionsOnce sync.Once
	// ambient is the ambient index (ambient.go); nil unless PILOT_ENABLE_AMBIENT
	ambient *ambient.Index
	// ambientStatus elects the writer of the ambient policy status (ambientstatus.go)
	ambientStatus *leaderelection.Election
	// workloadEntries registers VMs (autoregistration.go); nil when off
	workloadEntries *autoregistration.Controller
	// multicluster turns remote secrets into remote clusters
	// (multicluster.go); nil without a cluster
	multicluster *multicluster.Controller

	wg sync.WaitGroup
}

// NewServer wires a server from args. Nothing listens until Start.
func NewServer(args PilotArgs) (*Server, error) {
	s := newServer(args)
	if err := s.initKubeClient(); err != nil {
		return nil, err
	}
	if err := s.wire(); err != nil {
		return nil, err
	}
	return s, nil
}

func newServer(args PilotArgs) *Server {
	return &Server{
		args:         args,
		internalStop: make(chan struct{}),
		problems:     diag.New(nil),
		krtDebug:     krt.NewDebugHandler(),
	}
}

// wire builds every part on the server's client (nil: none), in order.
func (s *Server) wire() error {
	s.initMeshConfiguration()
	s.initNamespaceFilter()
	if err := s.initConfigController(); err != nil {
		return err
	}
	if err := s.initServiceControllers(); err != nil {
		return err
	}
	if err := s.initMulticluster(); err != nil {
		return err
	}
	s.initDiscovery()
	s.initAutoRegistration()
	s.initIPAllocate()
	if err := s.initSecurity(); err != nil {
		return err
	}
	if err := s.initInjection(); err != nil {
		return err
	}
	if err := s.initGatewayDeployment(); err != nil {
		return err
	}
	s.initServers()
	initMetrics()
	return nil
}

// initMeshConfiguration comes first: everything else may read the mesh config.
func (s *Server) initMeshConfiguration() {
	logger := log.RegisterScope("mesh", "mesh config").Slog()
	opts := []mesh.Option{mesh.WithLogger(logger), mesh.WithStop(s.internalStop)}
	_, err := os.Stat(s.args.MeshConfigFile)
	fileExists := err == nil
	var primary, shared mesh.Source
	if s.kubeClient != nil {
		// the ConfigMap informers start at once: the mesh config is needed first
		s.meshCM = kubemesh.NewConfigMapSource(s.kubeClient.Kube(), s.args.Namespace, kubemesh.ConfigMapName(s.args.Revision),
			s.internalStop, "mesh", "meshNetworks")
		s.waitForConfigMap(s.meshCM)
		primary = s.meshCM.Key("mesh")
		if s.args.SharedMeshConfig != "" {
			s.sharedCM = kubemesh.NewConfigMapSource(s.kubeClient.Kube(), s.args.Namespace, s.args.SharedMeshConfig,
				s.internalStop, "mesh")
			s.waitForConfigMap(s.sharedCM)
			shared = s.sharedCM.Key("mesh")
		}
		if fileExists {
			scope.Infof("mesh config file %s exists: the ConfigMap %s is not read", s.args.MeshConfigFile, kubemesh.ConfigMapName(s.args.Revision))
		}
	}
	sources := mesh.Sources(s.args.MeshConfigFile, fileExists, primary, shared, opts...)
	s.mesh = mesh.NewWatcher(sources, s.internalStop, opts...)
	s.mesh.AddMeshHandler(func() {
		scope.Infof("mesh config changed")
	})

	_, err = os.Stat(s.args.NetworksConfigFile)
	var cmNetworks mesh.Source
	if s.meshCM != nil {
		cmNetworks = s.meshCM.Key("meshNetworks")
	}
	netSources := mesh.Sources(s.args.NetworksConfigFile, err == nil, cmNetworks, nil, opts...)
	netOpts := opts
	if !s.args.Multicluster.ResolveHostnameGateways {
		// RESOLVE_HOSTNAME_GATEWAYS=false: a hostname gateway is invalid
		netOpts = append(slices.Clip(opts), mesh.WithoutHostnameGateways())
	}
	s.networks = mesh.NewNetworksWatcher(netSources, s.internalStop, netOpts...)

	s.problems.AddProvider(func() []diag.Problem {
		var out []diag.Problem
		for _, e := range s.mesh.Errors() {
			out = append(out, diag.Problem{Severity: diag.Error, Source: "mesh", Subject: e.Source,
				Message: "invalid mesh config, keeping the last good one: " + e.Err.Error(), Since: e.Since})
		}
		for _, w := range s.mesh.Warnings() {
			out = append(out, diag.Problem{Severity: diag.Warning, Source: "mesh", Subject: w.Source, Message: w.Message})
		}
		for _, e := range s.networks.Errors() {
			out = append(out, diag.Problem{Severity: diag.Error, Source: "meshNetworks", Subject: e.Source,
				Message: e.Err.Error(), Since: e.Since})
		}
		return out
	})
}

// storedSchemas are the kinds kept in the store.
func (s *Server) storedSchemas() collection.Schemas {
	if s.args.EnableGatewayAPI {
		return collections.PilotGatewayAPI()
	}
	return collections.Pilot
}

func (s *Server) initConfigController() error {
	var stores []aggregate.CollectionStore
	switch {
	case s.args.ConfigDir != "":
		src, err := file.New(file.Options{
			Dir:          s.args.ConfigDir,
			Schemas:      s.storedSchemas(),
			Domain:       s.args.Domain,
			Problems:     s.problems,
			Krt:          s.krtDebug,
			ResyncPeriod: s.args.FileResync,
		})
		if err != nil {
			return err
		}
		stores = append(stores, src)
		gw, err := s.gatewaySource(src)
		if err != nil {
			return err
		}
		if gw != nil {
			stores = append(stores, gw)
		}
	case s.kubeClient != nil:
		crd, err := crdclient.New(s.kubeClient, s.storedSchemas(), crdclient.Options{
			Problems:        s.problems,
			Revision:        s.args.Revision,
			DomainSuffix:    s.args.Domain,
			NamespaceFilter: s.nsFilter,
			Krt:             s.krtDebug,
			LastGood:        crdclient.LastGoodOptions{Namespace: s.args.Namespace, Name: crdclient.LastGoodName(s.args.Revision)},
		})
		if err != nil {
			return err
		}
		s.initLastGood(crd)
		stores = append(stores, crd)
		gw, err := s.gatewaySource(crd)
		if err != nil {
			return err
		}
		if gw != nil {
			stores = append(stores, gw)
			s.initGatewayStatus(gw, crd, crd, crd.KindServed(gvk.GatewayClass))
		}
		// the CRD client is the one writer
		st, err := aggregate.MakeWriteableCache(stores, crd,
			aggregate.Options{Stop: s.internalStop, Debug: s.krtDebug})
		if err != nil {
			return err
		}
		s.store = st
		return nil
	default:
		scope.Warnf("no config source (neither --configDir nor a Kubernetes client): serving an empty config store")
		s.problems.Report("bootstrap", "config", []diag.Problem{{Severity: diag.Warning,
			Message: "no config source: neither --configDir nor a Kubernetes client is configured"}})
		stores = append(stores, memory.New(s.storedSchemas(), krt.WithDebugging(s.krtDebug)))
	}
	st, err := aggregate.MakeCache(stores, aggregate.Options{Stop: s.internalStop, Debug: s.krtDebug})
	if err != nil {
		return err
	}
	s.store = st
	return nil
}

func (s *Server) initServers() {
	opts := xdsdebug.Options{
		Store:       s.store,
		Mesh:        s.Mesh,
		Collections: s.krtDebug,
		Problems:    s.problems,
		Profile:     s.args.Profile,
		Registry:    s.services,
		XDS:         s.discovery.server,
		Pushz:       s.pushzHandler(),
		Inject:      s.injection.debugHandler,
		PushAll: func() {
			s.discovery.engine.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.DebugTrigger)})
		},
	}
	if s.kubeClient != nil {
		// the cluster istiod runs in, then the remote clusters
		opts.Clusters = func() []xdsdebug.ClusterInfo {
			st := xdsdebug.ClusterSyncing
			if s.HasSynced() {
				st = xdsdebug.ClusterSynced
			}
			out := []xdsdebug.ClusterInfo{{ID: s.args.ClusterID, SyncStatus: st}}
			if s.multicluster != nil {
				for _, c := range s.multicluster.Clusters() {
					out = append(out, xdsdebug.ClusterInfo{ID: c.ID, SecretName: c.SecretName, SyncStatus: c.SyncStatus})
				}
			}
			return out
		}
	}
	if c := s.CA(); c != nil {
		opts.CA = c
	}
	opts.SystemNamespace, opts.NoAuth = s.args.Namespace, s.args.Security.NoDebugAuth
	if s.secure != nil && len(s.secure.auths) > 1 {
		opts.Authenticate = s.secure.httpAuthenticate
	}
	debug := xdsdebug.New(opts)
	debug.AddPolicyz(s.discovery.authorizationz)
	debug.AddProxyTelemetryz(s.discovery.telemetryz)
	debug.RegisterXDS(s.discovery.server, s.args.Namespace)
	httpMux := http.NewServeMux()
	httpMux.HandleFunc("/ready", s.ready)
	debug.Install(httpMux)
	s.httpServer = &http.Server{Handler: httpMux, ReadHeaderTimeout: 10 * time.Second}

	monMux := http.NewServeMux()
	monMux.Handle("/metrics", metricsHandler())
	monMux.HandleFunc("/version", versionHandler)
	debug.Install(monMux)
	s.monitoringServer = &http.Server{Handler: monMux, ReadHeaderTimeout: 10 * time.Second}
}

// HTTPHandler is what --httpAddr serves (/ready and the debug endpoints).
func (s *Server) HTTPHandler() http.Handler { return s.httpServer.Handler }

// Mesh returns the active mesh config (read-only).
func (s *Server) Mesh() *meshconfig.MeshConfig { return s.mesh.Mesh() }

// Store returns the aggregate config store.
func (s *Server) Store() *aggregate.Store { return s.store }

// Problems returns the board of current configuration problems.
func (s *Server) Problems() *diag.Board { return s.problems }

// ready answers 200 once every config source has synced and the first
// PushContext is built, so that xDS streams are served (as Istio's
// readiness includes the first push): a Deployment's probe never admits
// proxies that would get Unavailable.
func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	if !s.HasSynced() {
		http.Error(w, "config sources not synced", http.StatusServiceUnavailable)
		return
	}
	if !s.discovery.server.Ready() {
		http.Error(w, "xDS not ready: first push context not built yet", http.StatusServiceUnavailable)
		return
	}
	if !s.injection.synced() {
		http.Error(w, "sidecar injector not ready: injector ConfigMap not read yet", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// Start binds the listeners and starts the sources. It returns once the
// listeners are bound; serving continues until Shutdown. When it fails it
// undoes what it started (see abortStart): the server is then stopped, as
// after Shutdown.
func (s *Server) Start() (err error) {
	defer func() {
		if err != nil {
			s.abortStart()
		}
	}()
	if s.httpListener, err = net.Listen("tcp", s.args.HTTPAddr); err != nil {
		return fmt.Errorf("--httpAddr %s: %v", s.args.HTTPAddr, err)
	}
	if s.monitorListener, err = net.Listen("tcp", s.args.MonitoringAddr); err != nil {
		return fmt.Errorf("--monitoringAddr %s: %v", s.args.MonitoringAddr, err)
	}
	s.serve(s.httpServer, s.httpListener, "http")
	s.serve(s.monitoringServer, s.monitorListener, "monitoring")
	if s.kubeClient != nil {
		s.kubeClient.Start(s.internalStop)
	}
	if s.multicluster != nil {
		s.multicluster.Run(s.internalStop)
	}
	if s.credentials != nil {
		s.credentials.Run(s.internalStop)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.store.Run(s.internalStop)
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		start := time.Now()
		if s.WaitUntilSynced(s.internalStop) {
			// The initial load is a burst of short-lived parsing garbage;
			// hand it back to the OS instead of carrying it as resident memory.
			debug.FreeOSMemory()
			scope.Infof("config sources synced in %v", time.Since(start).Round(time.Millisecond))
		}
	}()
	if !s.args.KeepIdleMemory {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			memrelease.Run(memrelease.Options{Released: func(free uint64) {
				scope.Debugf("returned %d MiB of free heap to the OS after a quiet second", free>>20)
			}}, s.internalStop)
		}()
	}
	// the listeners of fixed addresses are bound before those on port 0, so
	// that a port picked by the kernel never takes one a flag names
	if err := s.startDiscovery(); err != nil {
		return err
	}
	s.startGatewayStatus()
	s.startAmbientStatus()
	s.startGatewayDeployment()
	s.startAutoRegistration()
	s.startLastGood()
	s.startIPAllocate()
	return s.startSecureAndWebhooks()
}

// abortStart undoes a failed Start without draining (nothing was ready to
// serve): it closes the servers and the listeners Start bound, stops every
// goroutine it or NewServer started (they own internalStop) and waits for
// those of s.wg.
func (s *Server) abortStart() {
	for _, srv := range []*http.Server{s.httpServer, s.monitoringServer} {
		_ = srv.Close()
	}
	if s.webhooks != nil {
		_ = s.webhooks.srv.Close()
	}
	// a listener bound but not yet served is closed here; closing a served
	// one again is harmless
	for _, l := range []net.Listener{s.httpListener, s.monitorListener} {
		if l != nil {
			_ = l.Close()
		}
	}
	s.discovery.grpc.Stop()
	if s.secure != nil {
		s.secure.grpc.Stop()
	}
	s.stopOnce.Do(func() { close(s.internalStop) })
	s.wg.Wait()
}

func (s *Server) serve(srv *http.Server, l net.Listener, name string) {
	scope.Infof("%s server listening on %s", name, l.Addr())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			scope.Errorf("%s server: %v", name, err)
		}
	}()
}

// HTTPAddr is the bound address of the HTTP listener (after Start).
func (s *Server) HTTPAddr() string { return s.httpListener.Addr().String() }

// MonitoringAddr is the bound address of the monitoring listener (after Start).
func (s *Server) MonitoringAddr() string { return s.monitorListener.Addr().String() }

// WaitUntilSynced blocks until every source synced or stop closes.
func (s *Server) WaitUntilSynced(stop <-chan struct{}) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !s.HasSynced() {
		select {
		case <-stop:
			return false
		case <-t.C:
		}
	}
	return true
}

// Shutdown stops accepting requests, drains in-flight ones within
// ShutdownDuration, then stops every source and waits for its goroutines.
func (s *Server) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), s.args.ShutdownDuration)
	defer cancel()
	for _, srv := range []*http.Server{s.httpServer, s.monitoringServer} {
		if err := srv.Shutdown(ctx); err != nil {
			scope.Warnf("shutdown: %v", err)
		}
	}
	s.webhooks.shutdown(ctx)
	// drain xDS streams: proxies reconnect to another replica
	stopGRPC(s.discovery.grpc, s.args.ShutdownDuration)
	if s.secure != nil {
		stopGRPC(s.secure.grpc, s.args.ShutdownDuration)
	}
	s.stopOnce.Do(func() { close(s.internalStop) })
	s.wg.Wait()
}
