package kube

import (
	"fmt"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	istioinformers "istio.io/client-go/pkg/informers/externalversions"
	extclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	extfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	extinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
)

// Client is the one handle on an API server.
type Client interface {
	Kube() kubernetes.Interface
	Istio() istioclient.Interface
	GatewayAPI() gatewayclient.Interface
	Extensions() extclient.Interface
	// RESTConfig is nil for fake clients.
	RESTConfig() *rest.Config
	// Informer returns the shared typed informer of a resource from the
	// factory of its API group. Informers are created lazily and started by
	// Start (again, for informers created after a first Start).
	Informer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error)
	// Start starts every informer created so far that is not running yet.
	Start(stop <-chan struct{})
}

// Options tune a real client.
type Options struct {
	QPS   float32
	Burst int
	// Resync is the informers' resync period (0: none).
	Resync time.Duration
}

type client struct {
	kube    kubernetes.Interface
	istio   istioclient.Interface
	gateway gatewayclient.Interface
	ext     extclient.Interface
	config  *rest.Config

	kubeInf    informers.SharedInformerFactory
	istioInf   istioinformers.SharedInformerFactory
	gatewayInf gatewayinformers.SharedInformerFactory
	extInf     extinformers.SharedInformerFactory
}

// BuildConfig loads a kubeconfig file, or the in-cluster config when path is
// empty.
func BuildConfig(path string) (*rest.Config, error) {
	if path == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// NewClient builds a Client for cfg.
func NewClient(cfg *rest.Config, opts Options) (Client, error) {
	cfg = rest.CopyConfig(cfg)
	if opts.QPS > 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Burst > 0 {
		cfg.Burst = opts.Burst
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "istiod"
	}
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube client: %v", err)
	}
	i, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("istio client: %v", err)
	}
	g, err := gatewayclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("gateway-api client: %v", err)
	}
	e, err := extclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiextensions client: %v", err)
	}
	return newClient(k, i, g, e, cfg, opts.Resync), nil
}

// NewFakeClient builds a Client on client-go's fake clientsets, seeded with
// objects (each routed to the clientset of its type and stored under the
// canonical resource of its kind).
func NewFakeClient(objects ...runtime.Object) Client {
	noWatchList()
	k, i := kubefake.NewClientset(), istiofake.NewSimpleClientset()
	g, e := gatewayfake.NewSimpleClientset(), extfake.NewSimpleClientset()
	for _, o := range objects {
		var tracker interface {
			Create(schema.GroupVersionResource, runtime.Object, string, ...metav1.CreateOptions) error
		}
		var add func(*runtime.Scheme) error
		switch {
		case isScheme(istiofake.AddToScheme, o):
			tracker, add = i.Tracker(), istiofake.AddToScheme
		case isScheme(gatewayfake.AddToScheme, o):
			tracker, add = g.Tracker(), gatewayfake.AddToScheme
		case isScheme(extfake.AddToScheme, o):
			tracker, add = e.Tracker(), extfake.AddToScheme
		default:
			tracker, add = k.Tracker(), kubefake.AddToScheme
		}
		res, err := canonicalResource(add, o)
		if err != nil {
			panic(err)
		}
		ns := ""
		if m, err := meta.Accessor(o); err == nil {
			ns = m.GetNamespace()
		}
		if err := tracker.Create(res, o, ns); err != nil {
			panic(err)
		}
	}
	return newClient(k, i, g, e, nil, 0)
}

// canonicalResource finds the resource an object is stored under: among the
// kinds its Go type is registered as (types shared by several versions are
// registered several times), the canonical kind of the registry.
func canonicalResource(add func(*runtime.Scheme) error, o runtime.Object) (schema.GroupVersionResource, error) {
	s := runtime.NewScheme()
	_ = add(s)
	gvks, _, err := s.ObjectKinds(o)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, g := range gvks {
		if sc, ok := collections.All.FindByGroupVersionKind(config.FromKubernetesGVK(g)); ok {
			return sc.GroupVersionResource(), nil
		}
	}
	res, _ := meta.UnsafeGuessKindToResource(gvks[0])
	return res, nil
}

func isScheme(add func(*runtime.Scheme) error, o runtime.Object) bool {
	s := runtime.NewScheme()
	_ = add(s)
	gvks, _, err := s.ObjectKinds(o)
	return err == nil && len(gvks) > 0
}

func newClient(k kubernetes.Interface, i istioclient.Interface, g gatewayclient.Interface, e extclient.Interface,
	cfg *rest.Config, resync time.Duration) *client {
	return &client{
		kube: k, istio: i, gateway: g, ext: e, config: cfg,
		kubeInf:    informers.NewSharedInformerFactoryWithOptions(k, resync, informers.WithTransform(StripUnusedFields)),
		istioInf:   istioinformers.NewSharedInformerFactoryWithOptions(i, resync, istioinformers.WithTransform(StripUnusedFields)),
		gatewayInf: gatewayinformers.NewSharedInformerFactoryWithOptions(g, resync, gatewayinformers.WithTransform(StripUnusedFields)),
		extInf:     extinformers.NewSharedInformerFactoryWithOptions(e, resync, extinformers.WithTransform(StripUnusedFields)),
	}
}

func (c *client) Kube() kubernetes.Interface          { return c.kube }
func (c *client) Istio() istioclient.Interface        { return c.istio }
func (c *client) GatewayAPI() gatewayclient.Interface { return c.gateway }
func (c *client) Extensions() extclient.Interface     { return c.ext }
func (c *client) RESTConfig() *rest.Config            { return c.config }

func (c *client) Informer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	switch {
	case isIstioGroup(gvr.Group):
		gi, err := c.istioInf.ForResource(gvr)
		if err != nil {
			return nil, err
		}
		return gi.Informer(), nil
	case gvr.Group == "gateway.networking.k8s.io" || gvr.Group == "gateway.networking.x-k8s.io":
		gi, err := c.gatewayInf.ForResource(gvr)
		if err != nil {
			return nil, err
		}
		return gi.Informer(), nil
	case gvr.Group == "apiextensions.k8s.io":
		gi, err := c.extInf.ForResource(gvr)
		if err != nil {
			return nil, err
		}
		return gi.Informer(), nil
	}
	gi, err := c.kubeInf.ForResource(gvr)
	if err != nil {
		return nil, err
	}
	return gi.Informer(), nil
}

func isIstioGroup(g string) bool {
	switch g {
	case "networking.istio.io", "security.istio.io", "telemetry.istio.io", "extensions.istio.io":
		return true
	}
	return false
}

func (c *client) Start(stop <-chan struct{}) {
	c.kubeInf.Start(stop)
	c.istioInf.Start(stop)
	c.gatewayInf.Start(stop)
	c.extInf.Start(stop)
}
