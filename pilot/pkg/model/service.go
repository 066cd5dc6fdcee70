package model

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/meshplane/istiod/pkg/config/protocol"
)

// This file is the registry-independent model of a service. Registries build
// Service values and hand them out shared: a Service is immutable once a
// registry returned it, and whoever wants a variant copies it (ShallowCopy
// plus copies of what it changes). The JSON names are those of Istio's
// /debug/registryz.

// ProviderID names the registry a service or endpoint comes from.
type ProviderID string

// The registries.
const (
	// Kubernetes: Services, EndpointSlices and Pods of a cluster.
	Kubernetes ProviderID = "Kubernetes"
	// External: ServiceEntries and WorkloadEntries.
	External ProviderID = "External"
)

// UnspecifiedIP is the address of a service without a virtual IP.
const UnspecifiedIP = "0.0.0.0"

// Resolution says how a proxy finds the endpoints of a service. The values
// are Istio's (they show as numbers in /debug/registryz).
type Resolution int

// Resolutions.
const (
	// ClientSideLB: the proxy load-balances over the endpoints it is sent.
	ClientSideLB Resolution = iota
	// DNSLB: the proxy resolves the endpoints' names and uses one answer.
	DNSLB
	// Passthrough: the proxy forwards to the address the caller dialled.
	Passthrough
	// DNSRoundRobinLB: the proxy resolves names and round-robins over answers.
	DNSRoundRobinLB
	// Alias: the service is another name for a service (ExternalName).
	Alias
	// DynamicDNS: the proxy resolves the requested host on demand.
	DynamicDNS
)

func (r Resolution) String() string {
	switch r {
	case ClientSideLB:
		return "ClientSide"
	case DNSLB:
		return "DNS"
	case Passthrough:
		return "Passthrough"
	case DNSRoundRobinLB:
		return "DNSRoundRobin"
	case Alias:
		return "Alias"
	case DynamicDNS:
		return "DynamicDNS"
	}
	return fmt.Sprintf("%d", int(r))
}

// Visibility is one exportTo value: "*", ".", "~" or a namespace name.
type Visibility string

// Well-known exportTo values.
const (
	VisibilityPublic  Visibility = "*"
	VisibilityPrivate Visibility = "."
	VisibilityNone    Visibility = "~"
)

// ExportTo is a set of exportTo values; nil means "not set" (the mesh
// default applies). In JSON it is an object keyed by the values, as Istio
// renders its sets.
type ExportTo map[Visibility]struct{}

// NewExportTo builds the set of vs (nil when vs is empty).
func NewExportTo(vs ...string) ExportTo {
	if len(vs) == 0 {
		return nil
	}
	out := make(ExportTo, len(vs))
	for _, v := range vs {
		out[Visibility(v)] = struct{}{}
	}
	return out
}

// IsNone reports whether the set exports to nobody ("~" only).
func (e ExportTo) IsNone() bool {
	_, none := e[VisibilityNone]
	return none && len(e) == 1
}

// AddressMap holds addresses per cluster ID.
type AddressMap struct {
	Addresses map[string][]string
}

// For returns the addresses of cluster (read-only).
func (m AddressMap) For(cluster string) []string { return m.Addresses[cluster] }

// Equal compares two maps by content.
func (m AddressMap) Equal(o AddressMap) bool {
	return maps.EqualFunc(m.Addresses, o.Addresses, slices.Equal[[]string])
}

// Port is a port a service listens on.
type Port struct {
	// Name is the port's name; EDS selects endpoints by it.
	Name string `json:"name,omitempty"`
	// Port is the service port number (not the endpoints' port).
	Port int `json:"port"`
	// Protocol is the declared or inferred protocol.
	Protocol protocol.Instance `json:"protocol,omitempty"`
}

func (p Port) String() string {
	return fmt.Sprintf("Name:%s Port:%d Protocol:%v", p.Name, p.Port, p.Protocol)
}

// PortList is the ports of a service, in declaration order.
type PortList []*Port

// Get returns the port with this name.
func (l PortList) Get(name string) (*Port, bool) {
	for _, p := range l {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// GetByPort returns the port with this number.
func (l PortList) GetByPort(num int) (*Port, bool) {
	for _, p := range l {
		if p.Port == num {
			return p, true
		}
	}
	return nil, false
}

// Equal compares two lists element by element.
func (l PortList) Equal(o PortList) bool {
	return slices.EqualFunc(l, o, func(a, b *Port) bool { return *a == *b })
}

// TrafficDistribution is a service's preference for nearby endpoints.
type TrafficDistribution int

// Traffic distributions (Kubernetes spec.trafficDistribution).
const (
	TrafficDistributionAny TrafficDistribution = iota
	TrafficDistributionPreferSameZone
	TrafficDistributionPreferSameNode
)

// NamespacedHostname names a service by hostname and namespace.
type NamespacedHostname struct {
	Hostname  string
	Namespace string
}

// K8sAttributes are the attributes only Kubernetes Services have (and
// ObjectName, which ServiceEntries set too).
type K8sAttributes struct {
	// Type is spec.type (ClusterIP, NodePort, LoadBalancer, ExternalName).
	Type string
	// ExternalName is spec.externalName.
	ExternalName string
	// NodeLocal: spec.internalTrafficPolicy is Local.
	NodeLocal bool
	// TrafficDistribution is spec.trafficDistribution.
	TrafficDistribution TrafficDistribution
	// ObjectName is the name of the object behind the service when it
	// differs from Name (a ServiceEntry's name; empty for Services).
	ObjectName string
	// PublishNotReadyAddresses is spec.publishNotReadyAddresses.
	PublishNotReadyAddresses bool
}

// ServiceAttributes describe where a service comes from and whom it selects.
type ServiceAttributes struct {
	// ServiceRegistry is the registry that holds the service.
	ServiceRegistry ProviderID
	// Name is the Service name, or the host for ServiceEntries.
	Name string
	// Namespace is the namespace of the object behind the service.
	Namespace string
	// Labels are the object's labels.
	Labels map[string]string
	// ExportTo is where the service is visible (nil: mesh default).
	ExportTo ExportTo
	// LabelSelectors select the workloads of the service.
	LabelSelectors map[string]string
	// Aliases are the services that are ExternalName aliases of this one.
	Aliases []NamespacedHostname
	// ClusterExternalAddresses are the external addresses per cluster
	// (load balancer ingress, externalIPs).
	ClusterExternalAddresses AddressMap
	// ClusterExternalPorts maps service ports to node ports per cluster.
	ClusterExternalPorts map[string]map[uint32]uint32
	// PassthroughTargetPorts maps service ports to target ports of
	// Passthrough ServiceEntries.
	PassthroughTargetPorts map[uint32]uint32
	K8sAttributes
}

// Equal compares two attribute sets by content.
func (a ServiceAttributes) Equal(o ServiceAttributes) bool {
	return a.ServiceRegistry == o.ServiceRegistry && a.Name == o.Name && a.Namespace == o.Namespace &&
		maps.Equal(a.Labels, o.Labels) && maps.Equal(a.ExportTo, o.ExportTo) &&
		maps.Equal(a.LabelSelectors, o.LabelSelectors) && slices.Equal(a.Aliases, o.Aliases) &&
		a.ClusterExternalAddresses.Equal(o.ClusterExternalAddresses) &&
		maps.EqualFunc(a.ClusterExternalPorts, o.ClusterExternalPorts, maps.Equal[map[uint32]uint32]) &&
		maps.Equal(a.PassthroughTargetPorts, o.PassthroughTargetPorts) && a.K8sAttributes == o.K8sAttributes
}

// Service is one service of the mesh: a hostname, ports, addresses, and how
// to reach its endpoints (which live in the EndpointIndex).
type Service struct {
	Attributes ServiceAttributes
	// Ports are the ports the service listens on.
	Ports PortList `json:"ports,omitempty"`
	// ServiceAccounts are identities (SPIFFE URIs or names) allowed to run
	// the service, declared on the object.
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`
	// CreationTime is the object's creation time.
	CreationTime time.Time `json:"creationTime,omitempty"`
	// Hostname is the service's name in the mesh, e.g.
	// reviews.bookinfo.svc.cluster.local or www.example.com.
	Hostname string `json:"hostname"`
	// ClusterVIPs are the virtual IPs per cluster.
	ClusterVIPs AddressMap `json:"clusterVIPs,omitempty"`
	// DefaultAddress is the first virtual IP, or UnspecifiedIP.
	DefaultAddress string `json:"defaultAddress,omitempty"`
	// AutoAllocatedIPv4Address and AutoAllocatedIPv6Address are addresses
	// assigned to a ServiceEntry host that declares none.
	AutoAllocatedIPv4Address string `json:"autoAllocatedIPv4Address,omitempty"`
	AutoAllocatedIPv6Address string `json:"autoAllocatedIPv6Address,omitempty"`
	// Resolution says how proxies reach the endpoints.
	Resolution Resolution
	// MeshExternal marks services outside the mesh (no sidecars, no mTLS).
	MeshExternal bool
	// ResourceVersion is the version of the object behind the service.
	ResourceVersion string
}

// Key identifies a service across registries: namespace/hostname.
func (s *Service) Key() string {
	if s == nil {
		return ""
	}
	return s.Attributes.Namespace + "/" + s.Hostname
}

// Equals reports whether two services are the same for the data plane:
// every field but ResourceVersion (which changes on no-op writes).
func (s *Service) Equals(o *Service) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Hostname == o.Hostname && s.DefaultAddress == o.DefaultAddress &&
		s.AutoAllocatedIPv4Address == o.AutoAllocatedIPv4Address && s.AutoAllocatedIPv6Address == o.AutoAllocatedIPv6Address &&
		s.Resolution == o.Resolution && s.MeshExternal == o.MeshExternal && s.CreationTime.Equal(o.CreationTime) &&
		s.ClusterVIPs.Equal(o.ClusterVIPs) && s.Ports.Equal(o.Ports) && slices.Equal(s.ServiceAccounts, o.ServiceAccounts) &&
		s.Attributes.Equal(o.Attributes)
}

// ShallowCopy copies the service; maps and slices stay shared (read-only).
func (s *Service) ShallowCopy() *Service {
	out := *s
	return &out
}

// ServiceInstancePort is a service port with the port its workloads
// listen on.
type ServiceInstancePort struct {
	*Port
	// TargetPort is the workload's port behind the service port.
	TargetPort uint32
}

// ServiceTarget is a service a workload belongs to, on one port.
type ServiceTarget struct {
	Service *Service
	Port    ServiceInstancePort
}

// ProxyQuery describes a proxy to find its workload: what the proxy knows of
// itself (its IPs, and its labels and namespace from node metadata).
type ProxyQuery struct {
	// ID is the proxy's ID ("<name>.<namespace>" for a sidecar injected in
	// a pod): among several WorkloadEntries with its IP, the one so named
	// is its workload, as in Istio.
	ID          string
	IPAddresses []string
	Labels      map[string]string
	Namespace   string
	ClusterID   string
}

// ServiceDiscovery answers questions about the services of a registry (or of
// all registries). Returned services are shared and read-only.
type ServiceDiscovery interface {
	// Services lists every service.
	Services() []*Service
	// GetService returns the service with this hostname, or nil.
	GetService(hostname string) *Service
	// GetProxyServiceTargets returns the services (and ports) the workload
	// of a proxy serves.
	GetProxyServiceTargets(proxy *ProxyQuery) []ServiceTarget
}

// AddressesForProxy are the addresses a proxy in cluster clusterID with IP
// mode mode reaches the service on, the primary first, as Istio's
// GetAddressForProxy and GetExtraAddressesForProxy give them for a proxy
// that takes no auto-allocated address (ProxyAddresses).
func (s *Service) AddressesForProxy(clusterID string, mode IPMode) []string {
	return s.ProxyAddresses(clusterID, mode, false)
}

// ProxyAddresses are the addresses a proxy in cluster clusterID with IP
// mode mode reaches the service on, the primary first, as Istio's
// GetAddressForProxy and GetExtraAddressesForProxy give them: a Kubernetes
// service's VIPs in the proxy's cluster of the proxy's families (both, in
// order, for a dual-stack proxy); else, when autoAllocated (a proxy that
// captures DNS, with address allocation on) and the service has no
// address, the addresses allocated to it of the proxy's families (IPv4
// first); else its default address alone. A ServiceEntry's addresses are
// not per-cluster VIPs in Istio, which makes one service per address of
// which a proxy's scope keeps one: they give the default address alone too.
func (s *Service) ProxyAddresses(clusterID string, mode IPMode, autoAllocated bool) []string {
	if clusterID != "" && s.Attributes.ServiceRegistry != External {
		var out []string
		for _, a := range s.ClusterVIPs.For(clusterID) {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				if p, perr := netip.ParsePrefix(a); perr == nil {
					ip, err = p.Addr(), nil
				}
			}
			if err == nil && (mode == Dual || ip.Is4() == (mode == IPv4)) {
				out = append(out, a)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if autoAllocated && s.DefaultAddress == UnspecifiedIP {
		var out []string
		if s.AutoAllocatedIPv4Address != "" && mode != IPv6 {
			out = append(out, s.AutoAllocatedIPv4Address)
		}
		if s.AutoAllocatedIPv6Address != "" && mode != IPv4 {
			out = append(out, s.AutoAllocatedIPv6Address)
		}
		if len(out) > 0 {
			return out
		}
	}
	return []string{s.DefaultAddress}
}
