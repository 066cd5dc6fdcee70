package gateway

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
)

// Options fix the translation for the life of a source.
type Options struct {
	// DomainSuffix is the cluster domain: a Service backend becomes
	// <name>.<namespace>.svc.<DomainSuffix>.
	DomainSuffix string
	// Ambient is ambient mode (PILOT_ENABLE_AMBIENT with its waypoints):
	// the istio-waypoint class and controller istio.io/mesh-controller are
	// Istio's.
	Ambient bool
	// NoRemoteClass is PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API=false: the
	// istio-remote class and its controller istio.io/unmanaged-gateway are
	// not Istio's then.
	NoRemoteClass bool
}

// Context answers the translation's questions about the rest of the world.
// Snapshot answers from maps; the krt source answers from collections and
// records what each transform read. Returned values are shared: read-only.
type Context interface {
	// Class returns the class named name when this controller handles it (a
	// GatewayClass of a known controller, or a builtin class that does not
	// exist in the cluster), else nil.
	Class(name string) *Class
	// Namespaces lists every namespace (for allowedRoutes selectors).
	Namespaces() []NamespaceInfo
	// Service returns the service of hostname defined in namespace (a
	// Kubernetes Service, or a ServiceEntry host), nil when none is.
	Service(hostname, namespace string) *ServiceInfo
	// ServiceEntryHosts returns the hosts of ServiceEntry namespace/name;
	// false when it does not exist.
	ServiceEntryHosts(namespace, name string) ([]string, bool)
	// ServiceNamespaces lists, sorted, the namespaces defining hostname.
	ServiceNamespaces(hostname string) []string
	// Secret returns the data of a Secret; false when it does not exist.
	Secret(namespace, name string) (map[string][]byte, bool)
	// ConfigMap returns the data of a ConfigMap; false when it does not exist.
	ConfigMap(namespace, name string) (map[string]string, bool)
	// Allowed reports whether a ReferenceGrant of toNamespace lets objects of
	// kind from in fromNamespace refer to the toKind object toName.
	Allowed(from GroupKind, fromNamespace string, to GroupKind, toNamespace, toName string) bool
	// Listeners returns the listeners of Gateway namespace/name that routes
	// attach to, in listener order; nil when the Gateway is not ours.
	Listeners(namespace, name string) []ParentInfo
}

// GroupKind names a kind without its version.
type GroupKind struct {
	Group string
	Kind  string
}

// Class is a GatewayClass this controller handles.
type Class struct {
	Name       string
	Controller string
}

// NamespaceInfo is what the translation reads of a namespace.
type NamespaceInfo struct {
	Name   string
	Labels map[string]string
}

// ServicePort is one port of a service.
type ServicePort struct {
	Name string
	Port int
}

// ServiceInfo is what the translation reads of a service: a Kubernetes
// Service or one host of a ServiceEntry.
type ServiceInfo struct {
	Hostname  string
	Namespace string
	// Name is the object's name (Service or ServiceEntry).
	Name string
	// Kind is "Service" or "ServiceEntry".
	Kind   string
	Labels map[string]string
	// Type is the Kubernetes Service type (LoadBalancer, ClusterIP, ...).
	Type  string
	Ports []ServicePort
	// Addresses are the cluster IPs.
	Addresses []string
	// ExternalAddresses are the load balancer's and external IPs/hostnames.
	ExternalAddresses []string
	// EndpointPorts lists, per service port number, the target port of each
	// ready endpoint behind it.
	EndpointPorts map[int][]uint32
}

// ParentInfo is one listener a route can attach to.
type ParentInfo struct {
	// InternalName is the synthetic Gateway routes bind to (ns/name).
	InternalName string
	// AllowedKinds are the route kinds the listener admits.
	AllowedKinds []gatewayv1.RouteGroupKind
	// Hostnames are the server hosts: namespace/hostname.
	Hostnames []string
	// OriginalHostname is the listener's hostname as written ("" for any).
	OriginalHostname string
	SectionName      string
	Port             int
	Protocol         string
}

// Listener is the synthetic Istio Gateway of one Gateway listener.
type Listener struct {
	// Config is the networking.istio.io Gateway with the listener's server.
	Config config.Config
	// Valid listeners are served; the others only report status.
	Valid  bool
	Parent ParentInfo
}

// GatewayResult is what one Gateway yields.
type GatewayResult struct {
	// Status is nil when the Gateway is not this controller's. Listener
	// attachedRoutes are counted later (FinalizeGatewayStatus).
	Status    *gatewayv1.GatewayStatus
	Listeners []Listener
}

// KeyedVirtualService is a VirtualService with the key routes merge by:
// HTTPRoutes and GRPCRoutes bound to the same listener and hostname become
// one VirtualService. TCP and TLS VirtualServices have no key: they are
// final.
type KeyedVirtualService struct {
	Key    string
	Config config.Config
}

// Attachment is a route accepted by one listener of a Gateway.
type Attachment struct {
	Gateway  types.NamespacedName
	Listener string
}

// RouteResult is what one route yields.
type RouteResult struct {
	// Status lists the route's parents (those of other controllers kept).
	Status gatewayv1.RouteStatus
	// VirtualServices: for HTTP and gRPC routes, one per listener and
	// hostname, still to be merged by key; for TCP and TLS routes, final.
	VirtualServices []KeyedVirtualService
	Attachments     []Attachment
}

// ObjectStatus is the status one input object should carry.
type ObjectStatus struct {
	// Kind is the object's kind as the store holds it.
	Kind      config.GroupVersionKind
	Namespace string
	Name      string
	// Generation is the generation the status was computed for.
	Generation int64
	// Status is *gatewayv1.GatewayClassStatus, *gatewayv1.GatewayStatus,
	// *gatewayv1.HTTPRouteStatus, *gatewayv1.GRPCRouteStatus,
	// *gatewayv1alpha2.TCPRouteStatus or *gatewayv1.TLSRouteStatus.
	Status any
}

// ResourceName keys statuses by kind and object.
func (s ObjectStatus) ResourceName() string {
	return s.Kind.Kind + "/" + s.Namespace + "/" + s.Name
}

// Equals compares the statuses semantically.
func (s ObjectStatus) Equals(o ObjectStatus) bool {
	return s.Kind == o.Kind && s.Namespace == o.Namespace && s.Name == o.Name &&
		s.Generation == o.Generation && equality.Semantic.DeepEqual(s.Status, o.Status)
}

// ConfigError is a problem of an object's configuration reported in its
// status: Reason becomes the condition's reason.
type ConfigError struct {
	Reason  string
	Message string
}

// parentError says why a route may not attach to a listener.
type parentError struct {
	Reason  string
	Message string
}
