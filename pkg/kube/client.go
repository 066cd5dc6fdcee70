package kube

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
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
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/log"
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
	// Close lets go of the API server: every informer stops (Close waits
	// for them), Start does nothing any more, and the client's idle
	// connections are closed, so that a client dropped (a remote
	// cluster removed or its credentials rotated) leaves neither
	// goroutines nor a connection pool behind. Requests in flight end as
	// they would; one made afterwards (a lock released on the way out)
	// still works, on a connection closed once idle for the transport's
	// idle timeout. Calling it again does nothing.
	Close()
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
	// http is the clientsets' one HTTP client, its transport the
	// client's own (nil for fake clients)
	http *http.Client

	// closed ends the informers (Close); closeOnce guards it
	closed    chan struct{}
	closeOnce sync.Once

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

// The service account files kubelet mounts in every pod, which
// rest.InClusterConfig reads.
const (
	ServiceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	ServiceAccountCAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// InCluster locates the API server of the cluster a pod runs in, as
// rest.InClusterConfig finds it, with its inputs given instead of read
// from the process: Host and Port are KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT, TokenFile and CAFile the service account's
// files ("": the paths kubelet mounts them at).
type InCluster struct {
	Host, Port        string
	TokenFile, CAFile string
}

// Config is the in-cluster client config: https://Host:Port with the
// service account's token (re-read from TokenFile as it rotates) and,
// when CAFile holds certificates, that CA. Without Host or Port it is
// rest.ErrNotInCluster; a token that cannot be read is an error. As
// rest.InClusterConfig, a CA file that does not load is logged and left
// out (the system roots apply).
func (ic InCluster) Config() (*rest.Config, error) {
	if ic.Host == "" || ic.Port == "" {
		return nil, rest.ErrNotInCluster
	}
	tokenFile, caFile := ic.TokenFile, ic.CAFile
	if tokenFile == "" {
		tokenFile = ServiceAccountTokenFile
	}
	if caFile == "" {
		caFile = ServiceAccountCAFile
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{Host: "https://" + net.JoinHostPort(ic.Host, ic.Port), BearerToken: string(token), BearerTokenFile: tokenFile}
	if _, err := certutil.NewPool(caFile); err != nil {
		kubeLog.Errorf("in-cluster config: the root CA %s does not load: %v", caFile, err)
	} else {
		cfg.CAFile = caFile
	}
	return cfg, nil
}

var kubeLog = log.RegisterScope("kube", "Kubernetes clients")

// NewClient builds a Client for cfg. Its clientsets share one HTTP
// client whose transport is the client's own (not client-go's
// process-wide cache of transports by TLS settings, which keeps every
// transport it ever made, with its connections, for good): Close
// releases it.
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
	if cfg.Proxy == nil && cfg.Transport == nil {
		// the default proxy, set explicitly: client-go then builds a
		// transport for this client alone instead of a cached one
		cfg.Proxy = http.ProxyFromEnvironment
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client: %v", err)
	}
	k, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kube client: %v", err)
	}
	i, err := istioclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("istio client: %v", err)
	}
	g, err := gatewayclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("gateway-api client: %v", err)
	}
	e, err := extclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("apiextensions client: %v", err)
	}
	c := newClient(k, i, g, e, cfg, opts.Resync)
	c.http = hc
	return c, nil
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
		kube: k, istio: i, gateway: g, ext: e, config: cfg, closed: make(chan struct{}),
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
	select {
	case <-c.closed:
		return
	default:
	}
	// the informers end with stop or Close, whichever comes first
	both := make(chan struct{})
	go func() {
		defer close(both)
		select {
		case <-stop:
		case <-c.closed:
		}
	}()
	c.kubeInf.Start(both)
	c.istioInf.Start(both)
	c.gatewayInf.Start(both)
	c.extInf.Start(both)
}

func (c *client) Close() {
	c.closeOnce.Do(func() {
		close(c.closed)
		// Shutdown waits for the informers' goroutines; Start after it
		// starts nothing
		c.kubeInf.Shutdown()
		c.istioInf.Shutdown()
		c.gatewayInf.Shutdown()
		c.extInf.Shutdown()
		if c.http != nil {
			// the watches ended with the informers: their connections
			// are idle now
			utilnet.CloseIdleConnectionsFor(c.http.Transport)
		}
	})
}
