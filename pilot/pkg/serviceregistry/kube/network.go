package kube

import (
	"net/netip"
	"slices"
	"sort"
	"strconv"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// This file decides the network of the cluster's endpoints and finds the
// cluster's network gateways, as Istio's kube registry does:
//
//   - an endpoint's network is its pod's topology.istio.io/network label,
//     else that label on the system namespace (istiod's namespace, the same
//     name in every cluster) of this cluster, else meshNetworks (the
//     network whose fromRegistry names this cluster, else the one whose
//     fromCidr holds the endpoint's IP), else none;
//   - a Service labelled topology.istio.io/network is a gateway of that
//     network on port 15443 (or its networking.istio.io/gatewayPort label)
//     at each of its external addresses (load balancer ingress, externalIPs),
//     provided it declares that port or the HBONE port 15008; a Service
//     meshNetworks names as registryServiceName of a network whose
//     fromRegistry is this cluster is a gateway of that network on the port
//     meshNetworks gives;
//   - a gateway Service of type NodePort with the
//     traffic.istio.io/nodeSelector annotation and no externalIPs is
//     reached at the ExternalIP of each node the selector (a JSON map of
//     labels; empty or unreadable: every node) selects, and its gateway
//     port becomes the node port (network_nodeport.go);
//   - a Gateway API Gateway labelled topology.istio.io/network is a gateway
//     at its spec addresses on its auto-passthrough and HBONE listeners
//     (network_gatewayapi.go).
//
// Gateways whose address is a hostname are reported as they are; the push
// context resolves them (pilot/pkg/model/network_dns.go).

// networkSettings is what meshNetworks says about this cluster.
type networkSettings struct {
	// FromRegistry is the network whose endpoints name this cluster.
	FromRegistry string
	// CIDRs are the fromCidr entries of every network.
	CIDRs []cidrNetwork
	// ServiceGateways are the registryServiceName gateways of the
	// FromRegistry network, by hostname (network and port set).
	ServiceGateways map[string][]model.NetworkGateway
}

type cidrNetwork struct {
	Prefix  netip.Prefix
	Network string
}

// networkSettingsFor reads meshNetworks for cluster. Networks are read in
// name order, so that a cluster two networks claim always lands in the
// first (Istio reads a map and warns).
func networkSettingsFor(mn *meshconfig.MeshNetworks, cluster string) networkSettings {
	var out networkSettings
	names := make([]string, 0, len(mn.GetNetworks()))
	for name := range mn.GetNetworks() {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		nw := mn.GetNetworks()[name]
		fromRegistry := false
		for _, ep := range nw.GetEndpoints() {
			if c := ep.GetFromCidr(); c != "" {
				if p, err := netip.ParsePrefix(c); err == nil {
					out.CIDRs = append(out.CIDRs, cidrNetwork{Prefix: p.Masked(), Network: name})
				} else {
					scope.Warnf("meshNetworks: network %s: fromCidr %q does not parse; ignored", name, c)
				}
			}
			if r := ep.GetFromRegistry(); r != "" && r == cluster {
				fromRegistry = true
			}
		}
		if !fromRegistry {
			continue
		}
		if out.FromRegistry != "" {
			scope.Warnf("meshNetworks: networks %s and %s both name cluster %s in fromRegistry; its endpoints stay in %s",
				out.FromRegistry, name, cluster, out.FromRegistry)
			continue
		}
		out.FromRegistry = name
		for _, gw := range nw.GetGateways() {
			if svc := gw.GetRegistryServiceName(); svc != "" {
				if out.ServiceGateways == nil {
					out.ServiceGateways = map[string][]model.NetworkGateway{}
				}
				out.ServiceGateways[svc] = append(out.ServiceGateways[svc],
					model.NetworkGateway{Network: name, Cluster: cluster, Port: gw.GetPort()})
			}
		}
	}
	return out
}

// networkFor is the meshNetworks network of an endpoint IP: the
// fromRegistry network, else the widest fromCidr holding ip (Istio takes
// the first its CIDR trie returns, the least specific).
func (s *networkSettings) networkFor(ip string) string {
	if s.FromRegistry != "" {
		return s.FromRegistry
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	best := -1
	for i, c := range s.CIDRs {
		if c.Prefix.Contains(addr.Unmap()) && (best < 0 || c.Prefix.Bits() < s.CIDRs[best].Prefix.Bits()) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return s.CIDRs[best].Network
}

// SetMeshNetworks makes the registry read mn: every endpoint's network
// and the gateways are derived again.
func (c *Controller) SetMeshNetworks(mn *meshconfig.MeshNetworks) {
	ns := networkSettingsFor(mn, c.opts.ClusterID)
	c.networks.Set(&ns)
}

// endpointNetwork is the network of an endpoint at ip whose workload has
// labels (nil for an endpoint without a pod).
func (c *Controller) endpointNetwork(ctx krt.HandlerContext, ip string, labels map[string]string, st *settings) string {
	if nw := labels[model.NetworkLabel]; nw != "" {
		return nw
	}
	if sn := krt.FetchOne(ctx, c.systemNetwork.AsCollection()); sn != nil && sn.Network != "" {
		return sn.Network
	}
	if ns := krt.FetchOne(ctx, c.networks.AsCollection()); ns != nil {
		if nw := ns.networkFor(ip); nw != "" {
			return nw
		}
	}
	return st.DefaultNetwork
}

// systemNetwork is the network label of the system namespace: a
// singleton of its own, so that only a change of the label (not any write
// to the namespace) derives the endpoints again.
type systemNetwork struct{ Network string }

func (c *Controller) buildSystemNetwork(ctx krt.HandlerContext) *systemNetwork {
	out := &systemNetwork{}
	if c.opts.SystemNamespace == "" {
		return out
	}
	if ns := krt.FetchOne(ctx, c.namespaces, krt.FilterKey(c.opts.SystemNamespace)); ns != nil {
		out.Network = (*ns).Labels[model.NetworkLabel]
	}
	return out
}

// serviceGateways are the gateways one Service is.
type serviceGateways struct {
	key      string // namespace/name
	gateways []model.NetworkGateway
}

func (s serviceGateways) ResourceName() string { return s.key }

func (s serviceGateways) Equals(o serviceGateways) bool {
	return s.key == o.key && slices.Equal(s.gateways, o.gateways)
}

// buildGateways is the transform service → the gateways it is.
func (c *Controller) buildGateways(ctx krt.HandlerContext, s serviceInfo) *serviceGateways {
	ns := krt.FetchOne(ctx, c.networks.AsCollection())
	tmpl := gatewayTemplates(s.svc, ns)
	if len(tmpl) == 0 {
		return nil
	}
	addrs := s.svc.Attributes.ClusterExternalAddresses.For(c.opts.ClusterID)
	var nodePorts map[uint32]uint32
	if raw := krt.FetchOne(ctx, c.inputs.Services, krt.FilterKey(s.key)); raw != nil && isNodePortGateway(*raw) {
		nodePorts = nodePortMap(*raw)
		if len(addrs) == 0 {
			addrs = c.selectedNodeAddresses(ctx, *raw)
		}
	}
	var out []model.NetworkGateway
	for _, addr := range addrs {
		for _, gw := range tmpl {
			if np, ok := nodePorts[gw.Port]; ok {
				gw.Port = np
			}
			gw.Cluster, gw.Addr = c.opts.ClusterID, addr
			out = append(out, gw)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &serviceGateways{key: s.key, gateways: compactGateways(out)}
}

// gatewayTemplates are the gateways a service is, without address or
// cluster.
func gatewayTemplates(svc *model.Service, ns *networkSettings) []model.NetworkGateway {
	if nw := svc.Attributes.Labels[model.NetworkLabel]; nw != "" {
		port := model.DefaultNetworkGatewayPort
		if v := svc.Attributes.Labels[model.GatewayPortLabel]; v != "" {
			if p, err := strconv.Atoi(v); err == nil {
				port = p
			} else {
				scope.Warnf("Service %s/%s: label %s=%q is not a port; using %d", svc.Attributes.Namespace,
					svc.Attributes.Name, model.GatewayPortLabel, v, model.DefaultNetworkGatewayPort)
			}
		}
		hbone := model.DefaultNetworkGatewayHBONEPort
		_, mtls := svc.Ports.GetByPort(port)
		_, hasHBONE := svc.Ports.GetByPort(hbone)
		if !mtls && !hasHBONE {
			scope.Warnf("Service %s/%s is labelled as a gateway of network %s but has neither port %d nor port %d",
				svc.Attributes.Namespace, svc.Attributes.Name, nw, port, hbone)
			return nil
		}
		gw := model.NetworkGateway{Network: nw}
		if mtls {
			gw.Port = uint32(port)
		}
		if hasHBONE {
			gw.HBONEPort = uint32(hbone)
		}
		return []model.NetworkGateway{gw}
	}
	if ns != nil {
		return slices.Clone(ns.ServiceGateways[svc.Hostname])
	}
	return nil
}

// NetworkGateways lists the gateways of the cluster, sorted, without
// duplicates (owned by the caller).
func (c *Controller) NetworkGateways() []model.NetworkGateway {
	var out []model.NetworkGateway
	for _, s := range c.gateways.List() {
		out = append(out, s.gateways...)
	}
	return slices.Compact(model.SortGateways(out))
}

// onGatewayEvents pushes every proxy when the cluster's gateways change,
// as Istio does (a forced push: any proxy may reach the network, whatever
// its sidecar scope). A remote cluster's gateways appearing once it syncs
// are a change too.
func (c *Controller) onGatewayEvents(events []krt.Event[serviceGateways]) {
	if len(events) == 0 {
		return
	}
	cur := c.NetworkGateways()
	c.gatewaysMu.Lock()
	changed := !slices.Equal(cur, c.lastGateways)
	c.lastGateways = cur
	c.gatewaysMu.Unlock()
	if changed {
		c.opts.XDSUpdater.ConfigUpdate(&model.PushRequest{Full: true, Forced: true,
			Reason: model.NewReasonStats(model.NetworksTrigger)})
	}
}

// Network is the network of an endpoint at ip with labels, outside a
// transform: the labels' topology.istio.io/network, else the system
// namespace's, else meshNetworks', else the default (Istio's
// Controller.Network, the ServiceEntry registry's NetworkFor callback for
// WorkloadEntries of this cluster).
func (c *Controller) Network(ip string, labels map[string]string) string {
	if nw := labels[model.NetworkLabel]; nw != "" {
		return nw
	}
	if sn := c.systemNetwork.Get(); sn != nil && sn.Network != "" {
		return sn.Network
	}
	if ns := c.networks.Get(); ns != nil {
		if nw := ns.networkFor(ip); nw != "" {
			return nw
		}
	}
	return c.settings.Get().DefaultNetwork
}
