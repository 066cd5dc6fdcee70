package ambient

import (
	"net/netip"
	"regexp"
	"strings"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/workloadapi"
)

// Labels and annotations the index reads.
const (
	labelGatewayName        = "gateway.networking.k8s.io/gateway-name"
	labelUseWaypoint        = "istio.io/use-waypoint"
	labelUseWaypointNS      = "istio.io/use-waypoint-namespace"
	labelWaypointFor        = "istio.io/waypoint-for"
	labelGatewayManaged     = "gateway.istio.io/managed"
	labelWorkloadName       = "service.istio.io/workload-name"
	labelTunnel             = "networking.istio.io/tunnel"
	labelSubzone            = "topology.istio.io/subzone"
	labelServiceName        = "kubernetes.io/service-name"
	labelAutoAllocate       = "networking.istio.io/enable-autoallocate-ip"
	annotationRedirection   = "ambient.istio.io/redirection"
	annotationAutoRegGroup  = "istio.io/autoRegistrationGroup"
	annotationTrafficDist   = "networking.istio.io/traffic-distribution"
	annotationInboundBind   = "ambient.istio.io/waypoint-inbound-binding"
	annotationDryRun        = "istio.io/dry-run"
	managedMeshController   = "istio.io-mesh-controller"
	managedEastWestGateway  = "istio.io-eastwest-controller"
	waypointTrafficService  = "service"
	waypointTrafficWorkload = "workload"
	waypointTrafficAll      = "all"
)

// uids of workloads, as Istio spells them.
func podUID(cluster, ns, name string) string { return cluster + "//Pod/" + ns + "/" + name }

func workloadEntryUID(cluster, ns, name string) string {
	return cluster + "/networking.istio.io/WorkloadEntry/" + ns + "/" + name
}

func serviceEntryUID(cluster, ns, name, addr string) string {
	return cluster + "/networking.istio.io/ServiceEntry/" + ns + "/" + name + "/" + addr
}

func endpointSliceUID(cluster, ns, name, addr string) string {
	return cluster + "/discovery.k8s.io/EndpointSlice/" + ns + "/" + name + "/" + addr
}

// nodeLocality is a Node reduced to what workloads read: nodes change often,
// their locality almost never.
type nodeLocality struct {
	Name     string
	Locality *workloadapi.Locality
}

func (n nodeLocality) ResourceName() string { return n.Name }

// Equals compares content (krt change detection).
func (n nodeLocality) Equals(o nodeLocality) bool {
	return n.Name == o.Name && proto.Equal(n.Locality, o.Locality)
}

func nodeLocalityOf(n *corev1.Node) *nodeLocality {
	out := &nodeLocality{Name: n.Name}
	region, zone, sub := n.Labels[corev1.LabelTopologyRegion], n.Labels[corev1.LabelTopologyZone], n.Labels[labelSubzone]
	if region != "" || zone != "" || sub != "" {
		out.Locality = &workloadapi.Locality{Region: region, Zone: zone, Subzone: sub}
	}
	return out
}

// localityOf splits a WorkloadEntry locality "region/zone/subzone".
func localityOf(s string) *workloadapi.Locality {
	parts := strings.SplitN(s, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	if parts[0] == "" && parts[1] == "" && parts[2] == "" {
		return nil
	}
	return &workloadapi.Locality{Region: parts[0], Zone: parts[1], Subzone: parts[2]}
}

// canonicalService is the canonical name and revision of a workload:
// the first present of the canonical-name labels (else the workload
// name), and of the revision labels (else "latest").
func canonicalService(labels map[string]string, workloadName string) (string, string) {
	name, rev := workloadName, "latest"
	for _, k := range []string{"service.istio.io/canonical-name", "app.kubernetes.io/name", "app"} {
		if v, ok := labels[k]; ok {
			name = v
			break
		}
	}
	for _, k := range []string{"service.istio.io/canonical-revision", "app.kubernetes.io/version", "version"} {
		if v, ok := labels[k]; ok {
			rev = v
			break
		}
	}
	return name, rev
}

var cronJobName = regexp.MustCompile(`(.+)-\d{8,10}$`)

// podWorkloadName derives the workload a pod belongs to as Istio does: only
// for pods with a generated name, from the controlling owner (a
// ReplicaSet's Deployment, a Job's CronJob, an OpenShift
// DeploymentConfig, an Argo Rollout); the workload-name label overrides.
func podWorkloadName(p *corev1.Pod) string {
	name := p.Name
	if p.GenerateName != "" {
		for _, ref := range p.OwnerReferences {
			if ref.Controller == nil || !*ref.Controller {
				continue
			}
			name = ref.Name
			switch {
			case ref.Kind == "ReplicaSet" && p.Labels["pod-template-hash"] != "" &&
				strings.HasSuffix(ref.Name, p.Labels["pod-template-hash"]):
				name = strings.TrimSuffix(ref.Name, "-"+p.Labels["pod-template-hash"])
			case ref.Kind == "ReplicaSet" && p.Labels["rollouts-pod-template-hash"] != "" &&
				strings.HasSuffix(ref.Name, p.Labels["rollouts-pod-template-hash"]):
				name = strings.TrimSuffix(ref.Name, "-"+p.Labels["rollouts-pod-template-hash"])
			case ref.Kind == "ReplicationController" && p.Labels["deploymentconfig"] != "":
				name = p.Labels["deploymentconfig"]
			case ref.Kind == "Job":
				if m := cronJobName.FindStringSubmatch(ref.Name); len(m) == 2 {
					name = m[1]
				}
			}
			break
		}
	}
	if name == "" {
		name = p.Name
	}
	if wn, ok := p.Labels[labelWorkloadName]; ok {
		name = wn
	}
	return name
}

// appProtocol maps a port protocol to the workload API's.
func appProtocol(p protocol.Instance) workloadapi.AppProtocol {
	switch p {
	case protocol.HTTP:
		return workloadapi.AppProtocol_HTTP11
	case protocol.HTTP2:
		return workloadapi.AppProtocol_HTTP2
	case protocol.GRPC:
		return workloadapi.AppProtocol_GRPC
	case protocol.TLS, protocol.HTTPS:
		return workloadapi.AppProtocol_TLS
	case protocol.TCP:
		return workloadapi.AppProtocol_TCP
	}
	return workloadapi.AppProtocol_UNKNOWN
}

func kubeAppProtocol(p corev1.ServicePort) workloadapi.AppProtocol {
	return appProtocol(protocol.FromKubernetes(p.Port, p.Name, string(p.Protocol), p.AppProtocol))
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// podIPs are the pod's addresses (PodIPs, else PodIP); nil when one does
// not parse.
func podIPs(p *corev1.Pod) [][]byte {
	ips := p.Status.PodIPs
	if len(ips) == 0 && p.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: p.Status.PodIP}}
	}
	out := make([][]byte, 0, len(ips))
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip.IP)
		if err != nil {
			return nil
		}
		out = append(out, a.AsSlice())
	}
	return out
}

// findPortName is the TCP container port named name (native sidecars
// included).
func findPortName(p *corev1.Pod, name string) (int32, bool) {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == name && port.Protocol == corev1.ProtocolTCP {
				return port.ContainerPort, true
			}
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		for _, port := range c.Ports {
			if port.Name == name && port.Protocol == corev1.ProtocolTCP {
				return port.ContainerPort, true
			}
		}
	}
	return 0, false
}

// networkAddress parses an IP.
func networkAddress(ip, network string) (*workloadapi.NetworkAddress, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, false
	}
	return &workloadapi.NetworkAddress{Network: network, Address: a.AsSlice()}, true
}

// cidrAddress parses an IP or a CIDR (masked); the length is set for
// prefixes that are not a single IP.
func cidrAddress(s, network string) (*workloadapi.NetworkAddress, bool) {
	var prefix netip.Prefix
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, false
		}
		prefix = p.Masked()
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, false
		}
		prefix = netip.PrefixFrom(a, a.BitLen())
	}
	na := &workloadapi.NetworkAddress{Network: network, Address: prefix.Addr().AsSlice()}
	if !prefix.IsSingleIP() {
		l := uint32(prefix.Bits())
		na.Length = &l
	}
	return na, true
}

func ipKey(network string, b []byte) string {
	a, _ := netip.AddrFromSlice(b)
	return network + "/" + a.String()
}

// subsetOf reports whether every pair of small is in big (true for an empty
// small).
func subsetOf(small, big map[string]string) bool {
	for k, v := range small {
		if bv, ok := big[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// tunnelProtocol sets the tunnel of a workload: HBONE for pods istio-cni
// redirected, and native HBONE for workloads that say they speak it.
func setTunnelProtocol(labels, annotations map[string]string, w *workloadapi.Workload) {
	if annotations[annotationRedirection] == "enabled" {
		w.TunnelProtocol = workloadapi.TunnelProtocol_HBONE
	}
	if tl, ok := labels[labelTunnel]; ok {
		for _, t := range strings.Split(tl, ",") {
			if t == "http" {
				w.TunnelProtocol = workloadapi.TunnelProtocol_HBONE
				w.NativeTunnel = true
				break
			}
		}
	}
}
