package ambient

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("ambient", "ambient index (workload API for ztunnel)")

// Inputs are the collections the index reads. The Kubernetes collections
// are required; the config collections (from the config store, e.g. the
// aggregate Store.Collection(gvk...)) may be nil, which reads as empty.
type Inputs struct {
	Pods           krt.Collection[*corev1.Pod]
	Services       krt.Collection[*corev1.Service]
	Namespaces     krt.Collection[*corev1.Namespace]
	Nodes          krt.Collection[*corev1.Node]
	EndpointSlices krt.Collection[*discoveryv1.EndpointSlice]

	ServiceEntries        krt.Collection[config.Config]
	WorkloadEntries       krt.Collection[config.Config]
	AuthorizationPolicies krt.Collection[config.Config]
	PeerAuthentications   krt.Collection[config.Config]
	// KubernetesGateways are the Gateway API Gateways; those of a waypoint
	// class with status addresses are waypoints.
	KubernetesGateways krt.Collection[config.Config]
	// GatewayClasses (may be nil) give a waypoint its default traffic type
	// (the istio.io/waypoint-for label of its class).
	GatewayClasses krt.Collection[config.Config]

	// MeshConfig gives the root namespace and trust domain. nil: the root
	// namespace is Options.SystemNamespace and the trust domain
	// Options.TrustDomain, for the life of the index. MeshSettingsOf turns a
	// mesh config into MeshSettings.
	MeshConfig krt.Singleton[MeshSettings]
}

// MeshSettings is what the index reads of the mesh config.
type MeshSettings struct {
	// RootNamespace: policies there apply mesh-wide.
	RootNamespace string
	// TrustDomain of workload identities; "cluster.local" is left out of
	// workloads, as Istio leaves it.
	TrustDomain string
}

// MeshSettingsOf reads the settings the index needs from a mesh config,
// with Istio's defaults for what is unset.
func MeshSettingsOf(m *meshconfig.MeshConfig, systemNamespace string) MeshSettings {
	s := MeshSettings{RootNamespace: m.GetRootNamespace(), TrustDomain: m.GetTrustDomain()}
	if s.RootNamespace == "" {
		s.RootNamespace = systemNamespace
	}
	if s.TrustDomain == "" {
		s.TrustDomain = defaultTrustDomain
	}
	return s
}

// Options configure the index. Read once at construction.
type Options struct {
	// ClusterID names the cluster ("Kubernetes" by default).
	ClusterID string
	// DomainSuffix of service hostnames ("cluster.local" by default).
	DomainSuffix string
	// TrustDomain when Inputs.MeshConfig is nil ("cluster.local" by default).
	TrustDomain string
	// Network of the cluster when the system namespace carries no
	// topology.istio.io/network label (Istio reads only that label; its
	// default is "").
	Network string
	// SystemNamespace is istiod's namespace ("istio-system" by default): its
	// network label names the cluster's network, and it is the root
	// namespace when Inputs.MeshConfig is nil.
	SystemNamespace string
	// Namespaces, when set, are the namespaces read (discoverySelectors):
	// pods, Services and EndpointSlices of the others are left out.
	Namespaces NamespaceFilter
	// Krt registers the collections for /debug/krtz (may be nil).
	Krt *krt.DebugHandler
	// Stop ends the index's goroutines.
	Stop <-chan struct{}
}

const (
	defaultTrustDomain = "cluster.local"
	labelNetwork       = "topology.istio.io/network"
)

func (o *Options) defaults() {
	if o.ClusterID == "" {
		o.ClusterID = "Kubernetes"
	}
	if o.DomainSuffix == "" {
		o.DomainSuffix = "cluster.local"
	}
	if o.TrustDomain == "" {
		o.TrustDomain = defaultTrustDomain
	}
	if o.SystemNamespace == "" {
		o.SystemNamespace = "istio-system"
	}
}

// clusterNetwork is the network of the cluster (the singleton every
// address-building transform fetches).
type clusterNetwork struct{ Network string }

// Index is the ambient index of one cluster: krt collections of the
// workload API resources ztunnel receives.
type Index struct {
	opts Options
	in   Inputs

	mesh    krt.Singleton[MeshSettings]
	network krt.Singleton[clusterNetwork]
	nodes   krt.Collection[nodeLocality]

	waypoints      krt.Collection[waypoint]
	netGateways    krt.Collection[networkGateway]
	policies       krt.Collection[workloadPolicy]
	services       krt.Collection[serviceInfo]
	workloads      []krt.Collection[Address]
	addresses      krt.Collection[Address]
	authorizations krt.Collection[Authorization]

	synced []krt.Syncer
}

// New builds the index on in. The collections start computing at once;
// HasSynced says when the initial state is complete.
func New(in Inputs, opts Options) *Index {
	opts.defaults()
	x := &Index{opts: opts}
	in = x.fillInputs(in)
	if opts.Namespaces != nil {
		in = x.selectNamespaces(in, opts.Namespaces)
	}
	x.in = in

	x.mesh = in.MeshConfig
	if x.mesh == nil {
		x.mesh = krt.NewStatic(&MeshSettings{RootNamespace: opts.SystemNamespace, TrustDomain: opts.TrustDomain},
			x.krtOpts("ambient/mesh")...)
	}
	x.network = krt.NewSingleton(func(ctx krt.HandlerContext) *clusterNetwork {
		nw := opts.Network
		if ns := krt.FetchOne(ctx, in.Namespaces, krt.FilterKey(opts.SystemNamespace)); ns != nil {
			if v, ok := (*ns).Labels[labelNetwork]; ok {
				nw = v
			}
		}
		return &clusterNetwork{Network: nw}
	}, x.krtOpts("ambient/network")...)
	x.nodes = krt.NewCollection(in.Nodes, func(_ krt.HandlerContext, n *corev1.Node) *nodeLocality {
		return nodeLocalityOf(n)
	}, x.krtOpts("ambient/node-locality")...)

	x.waypoints = krt.NewCollection(in.KubernetesGateways, x.buildWaypoint, x.krtOpts("ambient/waypoints")...)
	x.netGateways = x.buildNetworkGateways()
	x.policies = krt.NewCollection(in.AuthorizationPolicies, x.buildWorkloadPolicy, x.krtOpts("ambient/authz-policies")...)
	x.services = x.buildServices()
	x.workloads = x.buildWorkloads()
	x.addresses = krt.JoinCollection(append(append([]krt.Collection[Address]{}, x.workloads...),
		krt.MapCollection(x.services, serviceAddress, x.krtOpts("ambient/service-addresses")...)),
		x.krtOpts("ambient/addresses")...)
	x.authorizations = x.buildAuthorizations()

	x.synced = []krt.Syncer{in.Pods, in.Services, in.Namespaces, in.Nodes, in.EndpointSlices,
		in.ServiceEntries, in.WorkloadEntries, in.AuthorizationPolicies, in.PeerAuthentications,
		in.KubernetesGateways, in.GatewayClasses, x.mesh.AsCollection(), x.network.AsCollection(),
		x.netGateways, x.addresses, x.authorizations}
	return x
}

// fillInputs replaces nil config collections by empty ones.
func (x *Index) fillInputs(in Inputs) Inputs {
	for _, c := range []*krt.Collection[config.Config]{&in.ServiceEntries, &in.WorkloadEntries,
		&in.AuthorizationPolicies, &in.PeerAuthentications, &in.KubernetesGateways, &in.GatewayClasses} {
		if *c == nil {
			*c = krt.NewStaticCollection[config.Config](nil, x.krtOpts("ambient/empty")...)
		}
	}
	return in
}

func (x *Index) krtOpts(name string) []krt.CollectionOption {
	o := []krt.CollectionOption{krt.WithName(name)}
	if x.opts.Stop != nil {
		o = append(o, krt.WithStop(x.opts.Stop))
	}
	if x.opts.Krt != nil {
		o = append(o, krt.WithDebugging(x.opts.Krt))
	}
	return o
}

// Addresses are the istio.workload.Address resources: every workload (by
// UID) and every service (by namespace/hostname). Objects are shared and
// immutable.
func (x *Index) Addresses() krt.Collection[Address] { return x.addresses }

// Authorizations are the istio.security.Authorization resources: the L4
// AuthorizationPolicies, the converted PeerAuthentications and the static
// STRICT policy. Objects are shared and immutable.
func (x *Index) Authorizations() krt.Collection[Authorization] { return x.authorizations }

// HasSynced reports whether every input synced and the outputs hold their
// initial state.
func (x *Index) HasSynced() bool { return krt.AllSynced(x.synced...) }

// fetchMesh reads the mesh settings (recording the dependency).
func (x *Index) fetchMesh(ctx krt.HandlerContext) MeshSettings {
	if m := krt.FetchOne(ctx, x.mesh.AsCollection()); m != nil {
		return *m
	}
	return MeshSettings{RootNamespace: x.opts.SystemNamespace, TrustDomain: x.opts.TrustDomain}
}

// fetchNetwork reads the cluster's network (recording the dependency).
func (x *Index) fetchNetwork(ctx krt.HandlerContext) string {
	if n := krt.FetchOne(ctx, x.network.AsCollection()); n != nil {
		return n.Network
	}
	return x.opts.Network
}

// pickTrustDomain is the trust domain a workload carries: the default one
// is left out.
func pickTrustDomain(m MeshSettings) string {
	if m.TrustDomain == defaultTrustDomain {
		return ""
	}
	return m.TrustDomain
}
