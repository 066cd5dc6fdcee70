package model

import (
	"maps"
	"slices"
	"strings"
)

// This file is the model of one endpoint of a service. Endpoints are built by
// the registries and handed to the EndpointIndex; once handed over they are
// immutable (the index and every reader share them). The JSON names are those
// of Istio's /debug/endpointShardz.

// HealthStatus is the health of an endpoint. The values are Istio's; zero
// means "not known" (endpoints from ServiceEntries), which proxies treat as
// healthy.
type HealthStatus int32

// Health statuses.
const (
	// Healthy: ready to take traffic.
	Healthy HealthStatus = 1
	// UnHealthy: not ready; kept so that proxies that ask for unhealthy
	// endpoints (and locality failover) see it.
	UnHealthy HealthStatus = 2
	// Draining: shutting down but still serving existing sessions.
	Draining HealthStatus = 3
	// Terminating: shutting down; ignored for failover.
	Terminating HealthStatus = 4
)

// TLS modes of an endpoint (label security.istio.io/tlsMode).
const (
	// DisabledTLSModeLabel: the endpoint takes plain traffic.
	DisabledTLSModeLabel = "disabled"
	// IstioMutualTLSModeLabel: the endpoint has a sidecar and takes Istio mTLS.
	IstioMutualTLSModeLabel = "istio"
)

// Labels with a meaning for endpoints.
const (
	// TLSModeLabel declares the TLS mode of a workload.
	TLSModeLabel = "security.istio.io/tlsMode"
	// NetworkLabel names the network of a workload (or of a namespace).
	NetworkLabel = "topology.istio.io/network"
	// ClusterLabel names the cluster of an endpoint.
	ClusterLabel = "topology.istio.io/cluster"
	// SubzoneLabel is the node label of the locality subzone.
	SubzoneLabel = "topology.istio.io/subzone"
	// RegionLabel and ZoneLabel are the node labels of the locality.
	RegionLabel = "topology.kubernetes.io/region"
	ZoneLabel   = "topology.kubernetes.io/zone"
	// HostnameLabel is the node name of a pod's endpoint.
	HostnameLabel = "kubernetes.io/hostname"
	// LocalityLabel overrides a workload's locality ("region.zone.subzone");
	// LegacyLocalityLabel is its older spelling.
	LocalityLabel       = "topology.istio.io/locality"
	LegacyLocalityLabel = "istio-locality"
)

// Locality is where an endpoint runs.
type Locality struct {
	// Label is "region/zone/subzone" (parts may be empty or absent).
	Label string
	// ClusterID is the cluster of the endpoint.
	ClusterID string
}

// IstioEndpoint is one address and port of a workload behind one service
// port. A workload that listens on two service ports has two endpoints.
type IstioEndpoint struct {
	// Labels are the workload's labels plus topology labels (cluster,
	// network, locality, node).
	Labels map[string]string
	// Addresses are the workload's addresses (the first is the primary); an
	// IP, a DNS name (DNS ServiceEntries) or a unix socket path.
	Addresses []string
	// ServicePortName selects the service port the endpoint serves.
	ServicePortName string
	// LegacyClusterPortKey is the service port number, for ServiceEntries
	// whose ports are matched by number.
	LegacyClusterPortKey int
	// ServiceAccount is the workload identity as a SPIFFE URI.
	ServiceAccount string
	// Network is the network the endpoint is reachable on ("" = default).
	Network string
	// Locality is where the endpoint runs.
	Locality Locality
	// EndpointPort is the port the workload listens on.
	EndpointPort uint32
	// LbWeight is the load-balancing weight (0 = 1).
	LbWeight uint32
	// TLSMode is "istio" or "disabled".
	TLSMode string
	// Namespace and WorkloadName name the workload, for telemetry.
	Namespace    string
	WorkloadName string
	// HostName and SubDomain give a pod a DNS name of its own:
	// <hostname>.<subdomain>.<namespace>.svc.<domain>.
	HostName  string
	SubDomain string
	// HealthStatus is the endpoint's health.
	HealthStatus HealthStatus
	// SendUnhealthyEndpoints: send the endpoint even when it is not healthy.
	SendUnhealthyEndpoints bool
	// NodeName is the node of a pod.
	NodeName string
}

// FirstAddress returns the primary address, or "".
func (ep *IstioEndpoint) FirstAddress() string {
	if ep == nil || len(ep.Addresses) == 0 {
		return ""
	}
	return ep.Addresses[0]
}

// Key distinguishes an endpoint among the endpoints of one service shard:
// address/workload/port name.
func (ep *IstioEndpoint) Key() string {
	return ep.FirstAddress() + "/" + ep.WorkloadName + "/" + ep.ServicePortName
}

// Equals compares two endpoints by content.
func (ep *IstioEndpoint) Equals(o *IstioEndpoint) bool {
	if ep == nil || o == nil {
		return ep == o
	}
	return ep.ServicePortName == o.ServicePortName && ep.LegacyClusterPortKey == o.LegacyClusterPortKey &&
		ep.ServiceAccount == o.ServiceAccount && ep.Network == o.Network && ep.Locality == o.Locality &&
		ep.EndpointPort == o.EndpointPort && ep.LbWeight == o.LbWeight && ep.TLSMode == o.TLSMode &&
		ep.Namespace == o.Namespace && ep.WorkloadName == o.WorkloadName && ep.HostName == o.HostName &&
		ep.SubDomain == o.SubDomain && ep.HealthStatus == o.HealthStatus &&
		ep.SendUnhealthyEndpoints == o.SendUnhealthyEndpoints && ep.NodeName == o.NodeName &&
		slices.Equal(ep.Addresses, o.Addresses) && maps.Equal(ep.Labels, o.Labels)
}

// ShallowCopy copies the endpoint; Labels and Addresses stay shared.
func (ep *IstioEndpoint) ShallowCopy() *IstioEndpoint {
	out := *ep
	return &out
}

// EndpointsEqual compares two endpoint lists element by element.
func EndpointsEqual(a, b []*IstioEndpoint) bool {
	return slices.EqualFunc(a, b, (*IstioEndpoint).Equals)
}

// SpiffeIdentity renders the identity of a Kubernetes service account:
// spiffe://<trustDomain>/ns/<namespace>/sa/<serviceAccount>.
func SpiffeIdentity(trustDomain, namespace, serviceAccount string) string {
	return "spiffe://" + trustDomain + "/ns/" + namespace + "/sa/" + serviceAccount
}

// LocalityFromLabels returns the locality a workload's labels force
// (topology.istio.io/locality, else istio-locality), with "." read as "/";
// "" when neither is set.
func LocalityFromLabels(labels map[string]string) string {
	l := labels[LocalityLabel]
	if l == "" {
		l = labels[LegacyLocalityLabel]
	}
	return strings.ReplaceAll(l, ".", "/")
}

// SplitLocality splits "region/zone/subzone".
func SplitLocality(locality string) (region, zone, subzone string) {
	parts := strings.SplitN(locality, "/", 3)
	region = parts[0]
	if len(parts) > 1 {
		zone = parts[1]
	}
	if len(parts) > 2 {
		subzone = parts[2]
	}
	return region, zone, subzone
}

// AugmentLabels returns a copy of labels with the topology labels of an
// endpoint: region, zone and subzone of the locality, the cluster, the node
// (kubernetes.io/hostname) and the network. Empty values are left out except
// the network, which is always present (a workload label wins).
func AugmentLabels(labels map[string]string, cluster, locality, node, network string) map[string]string {
	out := make(map[string]string, len(labels)+6)
	maps.Copy(out, labels)
	region, zone, subzone := SplitLocality(locality)
	setIf(out, RegionLabel, region)
	setIf(out, ZoneLabel, zone)
	setIf(out, SubzoneLabel, subzone)
	setIf(out, ClusterLabel, cluster)
	setIf(out, HostnameLabel, node)
	if out[NetworkLabel] == "" {
		out[NetworkLabel] = network
	}
	return out
}

func setIf(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}
