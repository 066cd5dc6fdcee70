package kube

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("kube-registry", "Kubernetes service registry")

// NamespaceFilter decides which namespaces are watched (discoverySelectors).
type NamespaceFilter interface {
	Filter(ns string) bool
	AddHandler(func())
}

// Options configure the registry. Read once at construction.
type Options struct {
	// ClusterID names the cluster ("Kubernetes" by default).
	ClusterID string
	// DomainSuffix of service hostnames ("cluster.local" by default).
	DomainSuffix string
	// TrustDomain of SPIFFE identities ("cluster.local" by default); change
	// it later with SetTrustDomain.
	TrustDomain string
	// DefaultNetwork is the network of endpoints neither a label nor
	// meshNetworks places.
	DefaultNetwork string
	// SystemNamespace is istiod's namespace: its topology.istio.io/network
	// label in this cluster is the network of the cluster's endpoints whose
	// pod names none.
	SystemNamespace string
	// ConfigCluster is set for the registry of the cluster istiod reads its
	// configuration from: only there do Gateways of class istio-remote
	// count as network gateways.
	ConfigCluster bool
	// NoGatewayAPINetworks is PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API=false:
	// Gateway API Gateways are not read, so none is a network gateway
	// (network_gatewayapi.go).
	NoGatewayAPINetworks bool
	// MeshNetworks is the meshNetworks at construction (nil: none); change
	// it later with SetMeshNetworks.
	MeshNetworks *meshconfig.MeshNetworks
	// XDSUpdater receives every change (required).
	XDSUpdater model.XDSUpdater
	// NamespaceFilter, when set, hides objects of unselected namespaces.
	NamespaceFilter NamespaceFilter
	// Problems receives bad-input reports (may be nil).
	Problems *diag.Board
	// Krt registers the collections for /debug/krtz (may be nil).
	Krt *krt.DebugHandler
	// Stop ends the registry's goroutines.
	Stop <-chan struct{}
}

func (o *Options) defaults() {
	if o.ClusterID == "" {
		o.ClusterID = "Kubernetes"
	}
	if o.DomainSuffix == "" {
		o.DomainSuffix = "cluster.local"
	}
	if o.TrustDomain == "" {
		o.TrustDomain = "cluster.local"
	}
}

// Inputs are the collections the registry reads; NewController builds them
// from informers, tests may hand static collections to NewFromCollections.
type Inputs struct {
	Services       krt.Collection[*corev1.Service]
	EndpointSlices krt.Collection[*discoveryv1.EndpointSlice]
	Pods           krt.Collection[*corev1.Pod]
	Nodes          krt.Collection[*corev1.Node]
	Namespaces     krt.Collection[*corev1.Namespace]
	// Gateways are the Gateway API Gateways (nil: none), for network
	// gateways (network_gatewayapi.go).
	Gateways krt.Collection[*gatewayv1.Gateway]
}

// settings are the inputs of every transform that change at run time: a
// change recomputes everything that read them.
type settings struct {
	TrustDomain    string
	DefaultNetwork string
	// FilterGeneration changes when the namespace filter does.
	FilterGeneration uint64
}

// Controller is the Kubernetes registry of one cluster.
type Controller struct {
	opts  Options
	shard model.ShardKey

	settings   krt.StaticSingleton[settings]
	filterGen  atomic.Uint64
	inputs     Inputs
	nodes      krt.Collection[*corev1.Node]
	namespaces krt.Collection[*corev1.Namespace]

	// networks is what meshNetworks says of the cluster, systemNetwork the
	// system namespace's network label (network.go)
	networks      krt.StaticSingleton[networkSettings]
	systemNetwork krt.Singleton[systemNetwork]

	services        krt.Collection[serviceInfo]
	servicesByNS    krt.Index[string, serviceInfo]
	workloads       krt.Collection[model.WorkloadInstance]
	podIPs          krt.Collection[podIP]
	slices          krt.Collection[sliceInfo]
	slicesByService krt.Index[string, sliceInfo]
	gateways        krt.Collection[serviceGateways]
	// lastGateways are the gateways last reported (guarded by gatewaysMu)
	gatewaysMu   sync.Mutex
	lastGateways []model.NetworkGateway

	// entries are the WorkloadEntries Services select (nil: none;
	// workloadentries.go), guarded by weMu; edsMu serialises endpoint
	// pushes and guards entryServices, the services whose last push held
	// entries' endpoints
	weMu          sync.Mutex
	entries       *workloadEntrySource
	edsMu         sync.Mutex
	entryServices map[string]bool

	registrations []krt.HandlerRegistration
}

var _ model.ServiceDiscovery = (*Controller)(nil)

// NewController builds the registry on the informers of client; the caller
// starts them (client.Start) after construction.
func NewController(client kube.Client, opts Options) (*Controller, error) {
	in := Inputs{}
	var err error
	if in.Services, err = informerCollection[*corev1.Service](client, gvr.Service, "Services", opts); err != nil {
		return nil, err
	}
	if in.EndpointSlices, err = informerCollection[*discoveryv1.EndpointSlice](client, gvr.EndpointSlice, "EndpointSlices", opts); err != nil {
		return nil, err
	}
	if in.Pods, err = informerCollection[*corev1.Pod](client, gvr.Pod, "Pods", opts); err != nil {
		return nil, err
	}
	if in.Nodes, err = informerCollection[*corev1.Node](client, gvr.Node, "Nodes", opts); err != nil {
		return nil, err
	}
	if in.Namespaces, err = informerCollection[*corev1.Namespace](client, gvr.Namespace, "Namespaces", opts); err != nil {
		return nil, err
	}
	in.Gateways = gatewayAPIInput(client, opts)
	return NewFromCollections(in, opts), nil
}

func informerCollection[T any](client kube.Client, res schema.GroupVersionResource, name string, opts Options,
) (krt.Collection[T], error) {
	inf, err := client.Informer(res)
	if err != nil {
		return nil, fmt.Errorf("kube registry: %s informer: %v", name, err)
	}
	kopts := []krt.CollectionOption{krt.WithName("kube-registry/informer/" + name)}
	if opts.Stop != nil {
		kopts = append(kopts, krt.WithStop(opts.Stop))
	}
	if opts.Krt != nil {
		kopts = append(kopts, krt.WithDebugging(opts.Krt))
	}
	return krt.WrapClient[T](inf, kopts...), nil
}

// NewFromCollections builds the registry on in.
func NewFromCollections(in Inputs, opts Options) *Controller {
	opts.defaults()
	c := &Controller{opts: opts, shard: model.NewShardKey(model.Kubernetes, opts.ClusterID), inputs: in,
		nodes: in.Nodes, namespaces: in.Namespaces, entryServices: map[string]bool{}}
	c.settings = krt.NewStatic(&settings{TrustDomain: opts.TrustDomain, DefaultNetwork: opts.DefaultNetwork},
		c.krtOpts("kube-registry/settings")...)
	ns := networkSettingsFor(opts.MeshNetworks, opts.ClusterID)
	c.networks = krt.NewStatic(&ns, c.krtOpts("kube-registry/networks")...)
	c.systemNetwork = krt.NewSingleton(c.buildSystemNetwork, c.krtOpts("kube-registry/system-network")...)
	if opts.NamespaceFilter != nil {
		opts.NamespaceFilter.AddHandler(c.namespacesChanged)
	}
	c.services = krt.NewCollection(in.Services, c.buildService, c.krtOpts("kube-registry/services")...)
	c.servicesByNS = krt.NewNamespaceIndex(c.services)
	c.gateways = c.networkGatewayCollection(in)
	c.workloads = krt.NewCollection(in.Pods, c.buildWorkload, c.krtOpts("kube-registry/workloads")...)
	c.podIPs = krt.NewManyCollection(c.workloads, func(_ krt.HandlerContext, w model.WorkloadInstance) []podIP {
		out := make([]podIP, 0, len(w.Endpoint.Addresses))
		for _, ip := range w.Endpoint.Addresses {
			out = append(out, podIP{key: w.Namespace + "/" + ip, workload: w.ResourceName()})
		}
		return out
	}, c.krtOpts("kube-registry/pod-ips")...)
	c.slices = krt.NewCollection(in.EndpointSlices, c.buildSlice, c.krtOpts("kube-registry/endpoint-slices")...)
	c.slicesByService = krt.NewIndex(c.slices, func(s sliceInfo) []string { return []string{s.service} })
	c.registerHandlers()
	return c
}

func (c *Controller) krtOpts(name string) []krt.CollectionOption {
	o := []krt.CollectionOption{krt.WithName(name)}
	if c.opts.Stop != nil {
		o = append(o, krt.WithStop(c.opts.Stop))
	}
	if c.opts.Krt != nil {
		o = append(o, krt.WithDebugging(c.opts.Krt))
	}
	return o
}

func (c *Controller) buildService(ctx krt.HandlerContext, svc *corev1.Service) *serviceInfo {
	st := krt.FetchOne(ctx, c.settings.AsCollection())
	if st == nil || !c.namespaceSelected(svc.Namespace) {
		return nil
	}
	info := convertService(svc, conversionContext{clusterID: c.opts.ClusterID, domainSuffix: c.opts.DomainSuffix,
		trustDomain: st.TrustDomain})
	return &info
}

// namespaceSelected asks the namespace filter. Transforms call it after
// fetching settings, whose FilterGeneration changes with the filter, so the
// answer is recomputed whenever it may change.
func (c *Controller) namespaceSelected(ns string) bool {
	return c.opts.NamespaceFilter == nil || c.opts.NamespaceFilter.Filter(ns)
}

func (c *Controller) namespacesChanged() {
	c.updateSettings(func(s *settings) { s.FilterGeneration = c.filterGen.Add(1) })
}

func (c *Controller) updateSettings(f func(*settings)) {
	cur := *c.settings.Get()
	f(&cur)
	c.settings.Set(&cur)
}

// SetTrustDomain changes the trust domain of the identities the registry
// renders (the mesh config changed).
func (c *Controller) SetTrustDomain(td string) {
	if td == "" {
		td = "cluster.local"
	}
	c.updateSettings(func(s *settings) { s.TrustDomain = td })
}

// Provider is Kubernetes.
func (c *Controller) Provider() model.ProviderID { return model.Kubernetes }

// Cluster is the cluster ID.
func (c *Controller) Cluster() string { return c.opts.ClusterID }

// Inputs are the collections the registry reads (its informers): other
// indexes over the same cluster (the ambient index) share them.
func (c *Controller) Inputs() Inputs { return c.inputs }

// Workloads is the pods of the cluster as workload instances, for other
// registries that select pods (ServiceEntry workloadSelector).
func (c *Controller) Workloads() krt.Collection[model.WorkloadInstance] { return c.workloads }

// HasSynced reports whether the initial state was read and handed to the
// XDSUpdater.
func (c *Controller) HasSynced() bool {
	if !krt.AllSynced(c.inputs.Services, c.inputs.EndpointSlices, c.inputs.Pods,
		c.inputs.Nodes, c.inputs.Namespaces, c.services, c.workloads, c.podIPs, c.slices, c.gateways, c.systemNetwork.AsCollection()) {
		return false
	}
	for _, r := range c.registrations {
		if !r.HasSynced() {
			return false
		}
	}
	return c.entriesSynced()
}

// Services lists the services, sorted by namespace/name.
func (c *Controller) Services() []*model.Service {
	infos := c.services.List()
	out := make([]*model.Service, len(infos))
	for i, s := range infos {
		out[i] = s.svc
	}
	return out
}

// GetService returns the service of a hostname of this cluster's domain.
func (c *Controller) GetService(hostname string) *model.Service {
	rest, ok := strings.CutSuffix(hostname, ".svc."+c.opts.DomainSuffix)
	if !ok {
		return nil
	}
	name, ns, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(ns, ".") {
		return nil
	}
	if s := c.services.GetKey(ns + "/" + name); s != nil {
		return s.svc
	}
	return nil
}
