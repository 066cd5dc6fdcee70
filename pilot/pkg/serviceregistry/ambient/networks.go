package ambient

import (
	"net/netip"
	"strconv"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/workloadapi"
)

// This file is the ambient index's network gateways, as Istio 1.31 builds
// them with AMBIENT_ENABLE_MULTI_NETWORK off (its default): they come from
// Gateway API Gateways only (the labelled Services and the meshNetworks
// gateways serve the sidecars' and waypoints' EDS, not ztunnel), and each
// becomes
//
//   - a workload of its own ("NetworkGateway/<network>/<address>/<HBONE
//     port>"), which ztunnel resolves the gateway addresses of other
//     workloads against;
//   - the network_gateway of every pod, WorkloadEntry and ServiceEntry
//     endpoint of its network: ztunnel reaches them through it (HBONE to
//     the gateway, the workload's address inside).

const (
	remoteGatewayClass   = "istio-remote"
	eastWestGatewayClass = "istio-east-west"
	annotationGatewaySA  = "gateway.istio.io/service-account"
	protocolHBONE        = "HBONE"
	gatewayWorkloadKind  = "NetworkGateway/"
)

// networkGateway is one address of a network's gateway.
type networkGateway struct {
	// Source is the Gateway's namespace/name.
	Source  string
	Network string
	Cluster string
	// Addr is an IP or a hostname (of the Gateway's status addresses).
	Addr string
	// Port is the mTLS port, HBONEPort the HBONE one (0: none).
	Port, HBONEPort uint32
	// ServiceAccount of the gateway's pods, in the Gateway's namespace.
	ServiceAccount string
	Namespace      string
}

// ResourceName is Istio's key of a network gateway: its source and address.
func (g networkGateway) ResourceName() string { return g.Source + "/" + g.Addr }

// Equals compares content (krt change detection).
func (g networkGateway) Equals(o networkGateway) bool { return g == o }

// gatewayServiceAccount is the service account of a gateway's pods, as
// Istio names it: the gateway.istio.io/service-account annotation, else
// "<name>-istio-remote" for class istio-remote, else the Gateway's name.
func gatewayServiceAccount(gw config.Config, class string) string {
	if sa := gw.Annotations[annotationGatewaySA]; sa != "" {
		return sa
	}
	if class == remoteGatewayClass {
		return gw.Name + "-" + class
	}
	return gw.Name
}

// networkGatewaysOf are the gateways a Gateway declares, as Istio's
// k8sGatewayToNetworkGateways reads them: only Gateways labelled
// topology.istio.io/network; in the cluster istio runs in (local), those of
// class istio-remote, one per status address of type IPAddress or Hostname,
// on the first HBONE listener (its port as both the mTLS and the HBONE
// port); in a remote cluster, those of class istio-east-west with an HBONE
// listener terminating TLS, without ports (Istio leaves them unset there).
func networkGatewaysOf(gw config.Config, cluster string, local bool) []networkGateway {
	spec, _ := gw.Spec.(*gatewayv1.GatewaySpec)
	status, _ := gw.Status.(*gatewayv1.GatewayStatus)
	nw := gw.Labels[labelNetwork]
	if spec == nil || status == nil || nw == "" {
		return nil
	}
	class := string(spec.GatewayClassName)
	if (local && class != remoteGatewayClass) || (!local && class != eastWestGatewayClass) {
		return nil
	}
	base := networkGateway{Source: gw.Namespace + "/" + gw.Name, Network: nw, Cluster: cluster,
		ServiceAccount: gatewayServiceAccount(gw, class), Namespace: gw.Namespace}
	var out []networkGateway
	for _, a := range status.Addresses {
		if a.Type == nil || (*a.Type != gatewayv1.IPAddressType && *a.Type != gatewayv1.HostnameAddressType) {
			continue
		}
		for _, l := range spec.Listeners {
			if l.Protocol != protocolHBONE {
				continue
			}
			g := base
			g.Addr = a.Value
			if local {
				g.Port, g.HBONEPort = uint32(l.Port), uint32(l.Port)
			} else if l.TLS == nil || l.TLS.Mode == nil || *l.TLS.Mode != gatewayv1.TLSModeTerminate {
				continue
			}
			out = append(out, g)
			break
		}
	}
	return out
}

func (x *Index) buildNetworkGateways() krt.Collection[networkGateway] {
	return krt.NewManyCollection(x.in.KubernetesGateways, func(_ krt.HandlerContext, gw config.Config) []networkGateway {
		return networkGatewaysOf(gw, x.opts.ClusterID, true)
	}, x.krtOpts("ambient/network-gateways")...)
}

// gatewayUID is the uid of a network gateway's workload.
func gatewayUID(g networkGateway) string {
	return gatewayWorkloadKind + g.Network + "/" + g.Addr + "/" + strconv.Itoa(int(g.HBONEPort))
}

// buildGatewayWorkload is the workload standing for a network gateway:
// its uid as name, the gateway's identity and network, its IP or hostname,
// nothing else (no cluster, no status, no services), as Istio's
// convertGateway builds it.
func (x *Index) buildGatewayWorkload(ctx krt.HandlerContext, g networkGateway) *Address {
	mesh := x.fetchMesh(ctx)
	uid := gatewayUID(g)
	w := &workloadapi.Workload{
		Uid:            uid,
		Name:           uid,
		ServiceAccount: g.ServiceAccount,
		Namespace:      g.Namespace,
		Network:        g.Network,
		TrustDomain:    pickTrustDomain(mesh),
	}
	if ip, err := netip.ParseAddr(g.Addr); err == nil {
		w.Addresses = [][]byte{ip.AsSlice()}
	} else {
		w.Hostname = g.Addr
	}
	a := workloadAddress(w)
	return &a
}

// networkGatewayAddress is the network_gateway of a workload of network
// nw: the first gateway of that network (by key; Istio takes the first its
// index returns, in no set order, which is the same with one gateway per
// network) that has an HBONE port; nil when none.
func (x *Index) networkGatewayAddress(ctx krt.HandlerContext, nw string) *workloadapi.GatewayAddress {
	gws := krt.Fetch(ctx, x.netGateways, krt.FilterGeneric(func(o any) bool {
		return o.(networkGateway).Network == nw
	}))
	for _, g := range gws {
		if g.HBONEPort == 0 {
			continue
		}
		ip, err := netip.ParseAddr(g.Addr)
		if err != nil {
			return &workloadapi.GatewayAddress{HboneMtlsPort: g.HBONEPort,
				Destination: &workloadapi.GatewayAddress_Hostname{Hostname: &workloadapi.NamespacedHostname{
					Namespace: g.Namespace, Hostname: g.Addr}}}
		}
		return &workloadapi.GatewayAddress{HboneMtlsPort: g.HBONEPort,
			Destination: &workloadapi.GatewayAddress_Address{Address: &workloadapi.NetworkAddress{
				Network: g.Network, Address: ip.AsSlice()}}}
	}
	return nil
}
