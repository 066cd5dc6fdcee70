package bootstrap

import (
	"encoding/json"
	"net/http"

	networking "istio.io/api/networking/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/inject"
	whinject "github.com/meshplane/istiod/pkg/webhooks/inject"
)

// InjectionOptions configure the sidecar injector (environment, read once
// by the command).
type InjectionOptions struct {
	// Disabled turns the injector off (INJECT_ENABLED=false).
	Disabled bool
	// NativeSidecars is ENABLE_NATIVE_SIDECARS (default auto).
	NativeSidecars inject.NativeSidecarMode
	// CompliancePolicy is COMPLIANCE_POLICY, shown to the templates.
	CompliancePolicy string
}

// injection is the sidecar injector: the injector ConfigMap's watcher and
// the webhook served on --httpsAddr.
type injection struct {
	watcher *inject.Watcher
	webhook *whinject.Webhook
	nodes   cache.SharedIndexInformer // nil unless native sidecars are auto-detected
}

// initInjection watches the injector ConfigMap of istiod's namespace and
// revision (live; problems on /debug/warningz under "injection"). Without a
// cluster there is no injector, as in Istio without an injection ConfigMap.
func (s *Server) initInjection() error {
	if s.kubeClient == nil || s.args.Injection.Disabled {
		return nil
	}
	name := inject.ConfigMapName(s.args.Revision)
	w, err := inject.WatchConfigMap(s.kubeClient.Kube(), s.args.Namespace, name, s.internalStop)
	if err != nil {
		s.problems.Report("bootstrap", "injection", []diag.Problem{{Severity: diag.Error, Object: "ConfigMap " + name,
			Message: "sidecar injection disabled: " + err.Error()}})
		return nil
	}
	s.problems.AddProvider(w.Problems)
	inj := &injection{watcher: w}
	mode := s.args.Injection.NativeSidecars
	if mode == "" {
		mode = inject.NativeSidecarsAuto
	}
	var nodes inject.NodeLister
	if mode == inject.NativeSidecarsAuto {
		inf, err := s.kubeClient.Informer(gvr.Node)
		if err != nil {
			scope.Warnf("injection: cannot watch nodes (%v): native sidecars are not auto-detected", err)
		} else {
			inj.nodes = inf
			nodes = nodeLister{inf.GetStore()}
		}
	}
	wh, err := whinject.New(whinject.Options{
		Config:           w.Config,
		Mesh:             s.mesh.Mesh,
		ProxyConfigs:     s.proxyConfigs,
		NativeSidecars:   mode,
		Nodes:            nodes,
		Revision:         s.args.Revision,
		CompliancePolicy: s.args.Injection.CompliancePolicy,
	})
	if err != nil {
		return err
	}
	inj.webhook = wh
	s.injection = inj
	return nil
}

// proxyConfigs indexes the ProxyConfig resources of the store.
func (s *Server) proxyConfigs() *inject.ProxyConfigs {
	var rs []inject.ProxyConfigResource
	for _, c := range s.store.List(gvk.ProxyConfig, "") {
		spec, ok := c.Spec.(*networking.ProxyConfig)
		if !ok {
			continue
		}
		rs = append(rs, inject.ProxyConfigResource{Namespace: c.Namespace, Name: c.Name, Created: c.CreationTimestamp, Spec: spec})
	}
	return inject.NewProxyConfigs(rs)
}

// register installs /inject on the webhook mux (nil-safe).
func (i *injection) register(mux *http.ServeMux) {
	if i != nil {
		i.webhook.Register(mux)
	}
}

// synced reports whether the injector ConfigMap and the nodes were listed
// (true without an injector): /ready waits for it, as Istio's readiness
// waits for its injector.
func (i *injection) synced() bool {
	if i == nil {
		return true
	}
	return i.watcher.HasSynced() && (i.nodes == nil || i.nodes.HasSynced())
}

// debugHandler serves /debug/inject: the active templates by name, as
// Istio (404 without an injector or before a config was read).
func (i *injection) debugHandler(w http.ResponseWriter, _ *http.Request) {
	var cfg *inject.Config
	if i != nil {
		cfg = i.watcher.Config()
	}
	if cfg == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	b, err := json.MarshalIndent(cfg.RawTemplates, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// nodeLister reads nodes from an informer's store.
type nodeLister struct{ store cache.Store }

var _ inject.NodeLister = nodeLister{}

func (l nodeLister) Node(name string) *corev1.Node {
	o, ok, err := l.store.GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	n, _ := o.(*corev1.Node)
	return n
}

func (l nodeLister) Nodes() []*corev1.Node {
	var out []*corev1.Node
	for _, o := range l.store.List() {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}
