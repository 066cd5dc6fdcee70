package bootstrap

import (
	"github.com/meshplane/istiod/pilot/pkg/config/aggregate"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway/statuswriter"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

// gatewaySource builds the Gateway API synthetic config source over store,
// the source of the Gateway API objects (nil when Gateway API is off). With
// a cluster it also reads Services, EndpointSlices, Namespaces, Secrets and
// ConfigMaps.
func (s *Server) gatewaySource(store aggregate.CollectionStore) (*gateway.Source, error) {
	if !s.args.EnableGatewayAPI {
		return nil, nil
	}
	in := gateway.Inputs{
		GatewayClasses:  store.Collection(gvk.GatewayClass),
		Gateways:        store.Collection(gvk.KubernetesGateway),
		HTTPRoutes:      store.Collection(gvk.HTTPRoute),
		GRPCRoutes:      store.Collection(gvk.GRPCRoute),
		TCPRoutes:       store.Collection(gvk.TCPRoute),
		TLSRoutes:       store.Collection(gvk.TLSRoute),
		ReferenceGrants: store.Collection(gvk.ReferenceGrant),
		ServiceEntries:  store.Collection(gvk.ServiceEntry),
	}
	opts := gateway.SourceOptions{Options: gateway.Options{DomainSuffix: s.args.Domain, Ambient: s.args.EnableAmbient,
		NoRemoteClass: !s.args.Multicluster.DiscoverGatewayAPINetworks},
		Stop: s.internalStop, Krt: s.krtDebug, Problems: s.problems}
	if s.kubeClient != nil {
		if err := gateway.AddKubeInputs(&in, s.kubeClient, opts); err != nil {
			return nil, err
		}
	}
	return gateway.NewSource(in, opts), nil
}

// initGatewayStatus makes the leader of Istio's gateway status Lease (per
// revision) write the statuses of src through writer and create the
// builtin GatewayClasses once classesServed closes (the GatewayClass CRD
// is installed: until then nothing is tried, and nothing warns).
func (s *Server) initGatewayStatus(src *gateway.Source, store aggregate.CollectionStore, writer model.ConfigStore,
	classesServed <-chan struct{}) {
	if src == nil || s.kubeClient == nil {
		return
	}
	w := statuswriter.New(statuswriter.Options{Store: writer, Statuses: src.Statuses(),
		Classes: store.Collection(gvk.GatewayClass), CreateClasses: true, Ambient: s.args.EnableAmbient,
		NoRemoteClass: !s.args.Multicluster.DiscoverGatewayAPINetworks,
		ClassesServed: classesServed})
	id := s.identity()
	s.gatewayStatus = leaderelection.New(s.kubeClient.Kube(), s.args.Namespace,
		leaderelection.PerRevision(leaderelection.GatewayStatusController, s.args.Revision), id, s.args.Security.LeaderElection)
	s.gatewayStatus.AddRunFunction(w.Run)
}

// startGatewayStatus contends for the gateway status Lease.
func (s *Server) startGatewayStatus() {
	s.contend(s.gatewayStatus)
}

// IsGatewayStatusLeader reports whether this replica writes Gateway API
// status now.
func (s *Server) IsGatewayStatusLeader() bool {
	return s.gatewayStatus != nil && s.gatewayStatus.IsLeader()
}
