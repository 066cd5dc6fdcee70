package bootstrap

import (
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// initAmbient serves ztunnel the workload API when PILOT_ENABLE_AMBIENT is
// on: the ambient index over the Kubernetes registry's informers and the
// config store, its generators on the discovery server, and a push to the
// ztunnels and waypoints on every change of an address or an authorization.
// Without it a ztunnel is refused, as Istio refuses it.
func (s *Server) initAmbient(d *discovery) {
	if !s.args.EnableAmbient {
		return
	}
	d.server.SetAmbient(true)
	if s.services.kube == nil {
		s.problems.Report("bootstrap", "ambient", []diag.Problem{{Severity: diag.Warning,
			Message: "PILOT_ENABLE_AMBIENT is on without a Kubernetes registry: ztunnel is served no workloads"}})
		return
	}
	kin := s.services.kube.Inputs()
	// the root namespace and trust domain follow the mesh config
	mesh := krt.NewStatic(ptr(ambient.MeshSettingsOf(s.mesh.Mesh(), s.args.Namespace)), krt.WithName("ambient/mesh"), krt.WithStop(s.internalStop))
	s.mesh.AddMeshHandler(func() { mesh.Set(ptr(ambient.MeshSettingsOf(s.mesh.Mesh(), s.args.Namespace))) })
	in := ambient.Inputs{
		Pods: kin.Pods, Services: kin.Services, Namespaces: kin.Namespaces, Nodes: kin.Nodes, EndpointSlices: kin.EndpointSlices,
		ServiceEntries:        s.store.Collection(gvk.ServiceEntry),
		WorkloadEntries:       s.store.Collection(gvk.WorkloadEntry),
		AuthorizationPolicies: s.store.Collection(gvk.AuthorizationPolicy),
		PeerAuthentications:   s.store.Collection(gvk.PeerAuthentication),
		KubernetesGateways:    s.store.Collection(gvk.KubernetesGateway),
		GatewayClasses:        s.store.Collection(gvk.GatewayClass),
		MeshConfig:            mesh,
	}
	opts := ambient.Options{
		ClusterID: s.args.ClusterID, DomainSuffix: s.args.Domain, TrustDomain: s.mesh.Mesh().GetTrustDomain(),
		SystemNamespace: s.args.Namespace, Krt: s.krtDebug, Stop: s.internalStop,
	}
	if s.nsFilter != nil {
		opts.Namespaces = s.nsFilter // discoverySelectors, as for the Kubernetes registry
	}
	idx := ambient.New(in, opts)
	s.ambient = idx
	s.initAmbientStatus(idx)
	(&generators.WorkloadGenerators{Source: idx}).Register(d.server)
	// waypoint proxies get the waypoint's configuration, not a sidecar's
	(&generators.WaypointGenerators{Source: idx, Endpoints: s.services.index, JWKS: d.jwks}).Register(d.server)
	push := func(names []string) {
		keys := make(map[model.ConfigKey]struct{}, len(names))
		for _, n := range names {
			keys[model.ConfigKey{Kind: kind.Address, Name: n}] = struct{}{}
		}
		d.engine.ConfigUpdate(&model.PushRequest{Full: true, ConfigsUpdated: keys, Reason: model.NewReasonStats(model.ServiceUpdate)})
	}
	idx.Addresses().RegisterBatch(func(evs []krt.Event[ambient.Address]) {
		names := make([]string, 0, len(evs))
		for _, e := range evs {
			names = append(names, e.Latest().Name)
		}
		push(names)
	}, false)
	idx.Authorizations().RegisterBatch(func(evs []krt.Event[ambient.Authorization]) {
		names := make([]string, 0, len(evs))
		for _, e := range evs {
			names = append(names, "authorization/"+e.Latest().Name)
		}
		push(names)
	}, false)
}

func ptr[T any](v T) *T { return &v }
