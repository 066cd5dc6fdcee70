package bootstrap

import (
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway/deployment"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

// GatewayDeploymentOptions configure the gateway deployment controller
// (environment, read once by the command).
type GatewayDeploymentOptions struct {
	// Enabled is PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER (default
	// true).
	Enabled bool
	// CopyLabelsAnnotations is PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS
	// (default true).
	CopyLabelsAnnotations bool
	// ManualDeployment is ENABLE_GATEWAY_API_MANUAL_DEPLOYMENT (default
	// true).
	ManualDeployment bool
	// QUICListeners is PILOT_ENABLE_QUIC_LISTENERS (default false): a UDP
	// Service port beside every HTTPS listener's.
	QUICListeners bool
}

// initGatewayDeployment makes the leader of Istio's per-revision
// istio-gateway-deployment Lease generate the Deployment, Service and
// ServiceAccount of every Gateway of an Istio class, from the kube-gateway
// template of the injector ConfigMap the sidecar injector watches (its own
// watch of it when injection is off). Kubernetes mode with Gateway API only.
func (s *Server) initGatewayDeployment() error {
	if s.kubeClient == nil || !s.args.EnableGatewayAPI || !s.args.GatewayDeployment.Enabled || s.args.ConfigDir != "" {
		return nil
	}
	gateways := s.store.Collection(gvk.KubernetesGateway)
	if gateways == nil {
		return nil
	}
	watcher := s.gatewayInjectorWatcher()
	if watcher == nil {
		return nil
	}
	cms, err := s.kubeClient.Informer(gvr.ConfigMap)
	if err != nil {
		return err
	}
	nss, err := s.kubeClient.Informer(gvr.Namespace)
	if err != nil {
		return err
	}
	o := s.args.GatewayDeployment
	ctrl := deployment.New(deployment.Options{
		Kube:            s.kubeClient.Kube(),
		Gateways:        gateways,
		Classes:         s.store.Collection(gvk.GatewayClass),
		ListenerSets:    s.store.Collection(gvk.ListenerSet),
		ConfigMaps:      cms,
		Namespaces:      nss,
		Injection:       watcher.Config,
		InjectionSynced: watcher.HasSynced,
		InjectionName:   s.args.Namespace + "/" + inject.ConfigMapName(s.args.Revision),
		Mesh:            s.mesh.Mesh,
		ProxyConfigs:    s.proxyConfigs,
		SystemNamespace: s.args.Namespace,
		Env: deployment.Environment{
			ClusterID:             s.args.ClusterID,
			Revision:              s.args.Revision,
			NativeSidecars:        s.args.Injection.NativeSidecars != inject.NativeSidecarsDisabled,
			CompliancePolicy:      s.args.Injection.CompliancePolicy,
			CopyLabelsAnnotations: o.CopyLabelsAnnotations,
			QUICListeners:         o.QUICListeners,
			Ambient:               s.args.EnableAmbient,
		},
		ManualDeployment: o.ManualDeployment,
		Problems:         s.problems,
	})
	watcher.AddHandler(ctrl.EnqueueAll)
	s.mesh.AddMeshHandler(ctrl.EnqueueAll)
	if pcs := s.store.Collection(gvk.ProxyConfig); pcs != nil {
		pcs.RegisterBatch(func([]krt.Event[config.Config]) { ctrl.EnqueueAll() }, false)
	}
	id := s.identity()
	s.gatewayDeployment = leaderelection.New(s.kubeClient.Kube(), s.args.Namespace,
		leaderelection.PerRevision(leaderelection.GatewayDeploymentController, s.args.Revision), id, s.args.Security.LeaderElection)
	s.gatewayDeployment.AddRunFunction(ctrl.Run)
	return nil
}

// gatewayInjectorWatcher is the sidecar injector's watcher of the injector
// ConfigMap, or, with injection off, a watch of the same ConfigMap.
func (s *Server) gatewayInjectorWatcher() *inject.Watcher {
	if s.injection != nil {
		return s.injection.watcher
	}
	name := inject.ConfigMapName(s.args.Revision)
	w, err := inject.WatchConfigMap(s.kubeClient.Kube(), s.args.Namespace, name, s.internalStop)
	if err != nil {
		s.problems.Report("bootstrap", "gateway deployment", []diag.Problem{{Severity: diag.Error, Object: "ConfigMap " + name,
			Message: "Gateway deployments disabled: " + err.Error()}})
		return nil
	}
	s.problems.AddProvider(w.Problems)
	return w
}

// startGatewayDeployment contends for the gateway deployment Lease.
func (s *Server) startGatewayDeployment() {
	s.contend(s.gatewayDeployment)
}

// IsGatewayDeploymentLeader reports whether this replica generates
// Gateway deployments now.
func (s *Server) IsGatewayDeploymentLeader() bool {
	return s.gatewayDeployment != nil && s.gatewayDeployment.IsLeader()
}
