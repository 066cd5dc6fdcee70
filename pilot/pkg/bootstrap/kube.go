package bootstrap

import (
	"fmt"
	"time"

	"github.com/meshplane/istiod/pkg/config/mesh/kubemesh"
	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/namespace"
)

// initKubeClient builds the Kubernetes client from --kubeconfig or the
// in-cluster config; without either, istiod runs without a cluster.
func (s *Server) initKubeClient() error {
	if s.args.KubeConfig == "" && !s.args.InCluster {
		return nil
	}
	if !hasRegistry(s.args.Registries, "Kubernetes") && s.args.ConfigDir != "" {
		return nil
	}
	cfg, err := kube.BuildConfig(s.args.KubeConfig)
	if err != nil {
		return fmt.Errorf("kubernetes client config: %v", err)
	}
	c, err := kube.NewClient(cfg, kube.Options{QPS: s.args.KubernetesAPIQPS, Burst: s.args.KubernetesAPIBurst})
	if err != nil {
		return err
	}
	s.kubeClient = c
	return nil
}

func hasRegistry(rs []string, want string) bool {
	for _, r := range rs {
		if r == want {
			return true
		}
	}
	return false
}

// waitForConfigMap waits for a ConfigMap informer's first list, so the mesh
// config is known before anything that depends on it starts. A cluster that
// does not answer within a minute leaves the source empty (defaults apply)
// and the informer keeps trying.
func (s *Server) waitForConfigMap(src *kubemesh.ConfigMapSource) {
	stop := make(chan struct{})
	t := time.AfterFunc(time.Minute, func() { close(stop) })
	defer t.Stop()
	if !src.WaitUntilSynced(mergeStop(stop, s.internalStop)) {
		if err := src.Err(); err != nil {
			s.problems.Report("bootstrap", "mesh ConfigMap", []diag.Problem{{Severity: diag.Error, Object: "ConfigMap",
				Message: "cannot watch the mesh ConfigMap: " + err.Error()}})
			return
		}
		scope.Warnf("mesh ConfigMap not read within a minute; using defaults until it is")
	}
}

func mergeStop(a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		}
		close(out)
	}()
	return out
}

// initNamespaceFilter builds the discoverySelectors filter, after the mesh
// config (which holds the selectors) and before the informers it filters.
func (s *Server) initNamespaceFilter() {
	if s.kubeClient == nil {
		return
	}
	inf, err := s.kubeClient.Informer(gvr.Namespace)
	if err != nil {
		scope.Errorf("cannot watch namespaces: %v", err)
		return
	}
	s.nsFilter = namespace.NewDiscoveryFilter(inf, s.mesh.Mesh())
	s.mesh.AddMeshHandler(func() { s.nsFilter.SetMesh(s.mesh.Mesh()) })
	// synced when the filter has seen the initial namespaces, not merely
	// when the informer listed them
	s.namespaceSynced = s.nsFilter.HasSynced
	if err := s.nsFilter.Err(); err != nil {
		s.problems.Report("bootstrap", "namespaces", []diag.Problem{{Severity: diag.Error, Object: "Namespaces",
			Message: "cannot filter namespaces by discoverySelectors: " + err.Error()}})
	}
}

// HasSynced reports whether every source and informer has synced.
func (s *Server) HasSynced() bool {
	if s.namespaceSynced != nil && !s.namespaceSynced() {
		return false
	}
	if s.services != nil && !s.services.HasSynced() {
		return false
	}
	if s.credentials != nil && !s.credentials.HasSynced() {
		return false
	}
	if s.ambient != nil && !s.ambient.HasSynced() {
		return false
	}
	if s.multicluster != nil && !s.multicluster.HasSynced() {
		return false
	}
	return s.store.HasSynced()
}
