package ambient

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/workloadapi"
)

// waypoint is a Gateway that serves as a waypoint: one that has status
// addresses (the gateway controller writes them once its deployment is
// ready).
type waypoint struct {
	Namespace, Name string
	// Address is how ztunnel reaches it: the status hostname, else an IP.
	Address *workloadapi.GatewayAddress
	// Binding, when set, is how ztunnel sends to instances of the waypoint.
	Binding *workloadapi.ApplicationTunnel
	// TrafficType: "service", "workload", "all" or "none".
	TrafficType string
	// ServiceAccounts of the waypoint's pods, sorted.
	ServiceAccounts []string
	// From and Selector say which namespaces may use it (the listener's
	// allowedRoutes).
	From     gatewayv1.FromNamespaces
	Selector labels.Selector
}

func (w waypoint) ResourceName() string { return w.Namespace + "/" + w.Name }

// Equals compares content (krt change detection).
func (w waypoint) Equals(o waypoint) bool {
	return w.Namespace == o.Namespace && w.Name == o.Name && proto.Equal(w.Address, o.Address) &&
		proto.Equal(w.Binding, o.Binding) && w.TrafficType == o.TrafficType &&
		slices.Equal(w.ServiceAccounts, o.ServiceAccounts) && w.From == o.From &&
		(w.Selector == nil) == (o.Selector == nil) && (w.Selector == nil || w.Selector.String() == o.Selector.String())
}

func (w *waypoint) address() *workloadapi.GatewayAddress {
	if w == nil {
		return nil
	}
	return w.Address
}

func (x *Index) buildWaypoint(ctx krt.HandlerContext, gw config.Config) *waypoint {
	spec, _ := gw.Spec.(*gatewayv1.GatewaySpec)
	status, _ := gw.Status.(*gatewayv1.GatewayStatus)
	if spec == nil || status == nil || len(status.Addresses) == 0 {
		return nil
	}
	pods := krt.Fetch(ctx, x.in.Pods, krt.FilterNamespace(gw.Namespace),
		krt.FilterLabel(map[string]string{labelGatewayName: gw.Name}))
	sas := make([]string, 0, len(pods))
	for _, p := range pods {
		sas = append(sas, p.Spec.ServiceAccountName)
	}
	slices.Sort(sas)

	traffic := waypointTrafficService
	var classAnnotations map[string]string
	if class := krt.FetchOne(ctx, x.in.GatewayClasses, krt.FilterKey(string(spec.GatewayClassName))); class != nil {
		classAnnotations = class.Annotations
		if tt, ok := class.Labels[labelWaypointFor]; ok {
			traffic = tt
		}
	}
	if tt, ok := gw.Labels[labelWaypointFor]; ok {
		traffic = tt
	}
	binding := inboundBinding(gw.Annotations, classAnnotations)
	w := &waypoint{Namespace: gw.Namespace, Name: gw.Name, TrafficType: traffic, ServiceAccounts: sas,
		Binding: binding, Address: gatewayAddress(gw.Namespace, status, x.fetchNetwork(ctx))}
	w.From, w.Selector = allowedRoutes(spec, binding)
	return w
}

// inboundBinding reads ambient.istio.io/waypoint-inbound-binding
// ("PROXY" or "PROXY/<port>"; "NONE") from the Gateway, else its class.
func inboundBinding(gwAnn, classAnn map[string]string) *workloadapi.ApplicationTunnel {
	v, ok := gwAnn[annotationInboundBind]
	if !ok {
		if v, ok = classAnn[annotationInboundBind]; !ok {
			return nil
		}
	}
	parts := strings.Split(v, "/")
	if len(parts) > 2 {
		scope.Warnf("invalid %s %q: want <protocol> or <protocol>/<port>", annotationInboundBind, v)
		return nil
	}
	b := &workloadapi.ApplicationTunnel{}
	switch parts[0] {
	case "NONE":
		b.Protocol = workloadapi.ApplicationTunnel_NONE
	case "PROXY":
		b.Protocol = workloadapi.ApplicationTunnel_PROXY
	default:
		scope.Warnf("invalid %s protocol %q: only NONE and PROXY are supported", annotationInboundBind, parts[0])
		return nil
	}
	if len(parts) == 2 {
		p, err := strconv.ParseUint(parts[1], 10, 32)
		if err != nil {
			scope.Warnf("invalid %s port %q", annotationInboundBind, parts[1])
		}
		b.Port = uint32(p)
	}
	return b
}

// allowedRoutes reads the namespaces allowed to use the waypoint from the
// bound listener, else the HBONE listener on 15008; "Same" otherwise.
func allowedRoutes(spec *gatewayv1.GatewaySpec, b *workloadapi.ApplicationTunnel) (gatewayv1.FromNamespaces, labels.Selector) {
	pick := func(l gatewayv1.Listener) (gatewayv1.FromNamespaces, labels.Selector) {
		if l.AllowedRoutes == nil || l.AllowedRoutes.Namespaces == nil {
			return gatewayv1.NamespacesFromSame, nil
		}
		from := gatewayv1.NamespacesFromSame
		if f := l.AllowedRoutes.Namespaces.From; f != nil {
			from = *f
		}
		sel, err := metav1.LabelSelectorAsSelector(l.AllowedRoutes.Namespaces.Selector)
		if err != nil {
			sel = labels.Nothing()
		}
		return from, sel
	}
	if b != nil {
		for _, l := range spec.Listeners {
			if (b.Port != 0 && uint32(l.Port) == b.Port) ||
				(b.Port == 0 && b.Protocol == workloadapi.ApplicationTunnel_PROXY && l.Protocol == "istio.io/PROXY") {
				return pick(l)
			}
		}
	}
	for _, l := range spec.Listeners {
		if l.Protocol == "HBONE" && l.Port == 15008 {
			return pick(l)
		}
	}
	return gatewayv1.NamespacesFromSame, nil
}

func gatewayAddress(ns string, st *gatewayv1.GatewayStatus, network string) *workloadapi.GatewayAddress {
	for _, a := range st.Addresses {
		if a.Type != nil && *a.Type == gatewayv1.HostnameAddressType {
			return &workloadapi.GatewayAddress{HboneMtlsPort: 15008,
				Destination: &workloadapi.GatewayAddress_Hostname{Hostname: &workloadapi.NamespacedHostname{
					Namespace: ns, Hostname: a.Value}}}
		}
	}
	for _, a := range st.Addresses {
		if a.Type != nil && *a.Type == gatewayv1.IPAddressType {
			ip, err := netip.ParseAddr(a.Value)
			if err != nil {
				scope.Warnf("gateway %s: invalid status address %q", ns, a.Value)
				continue
			}
			return &workloadapi.GatewayAddress{HboneMtlsPort: 15008,
				Destination: &workloadapi.GatewayAddress_Address{Address: &workloadapi.NetworkAddress{
					Network: network, Address: ip.AsSlice()}}}
		}
	}
	return nil
}

// allows reports whether a namespace may use the waypoint.
func (w waypoint) allows(ns *corev1.Namespace, name string) bool {
	switch w.From {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSelector:
		if w.Selector == nil {
			return false
		}
		var l map[string]string
		if ns != nil {
			l = ns.Labels
		}
		return w.Selector.Matches(labels.Set(l))
	default:
		return w.Namespace == name
	}
}

// useWaypoint parses istio.io/use-waypoint (and its namespace label):
// none=true for "none", the opt-out.
func useWaypoint(lbls map[string]string, defaultNS string) (ns, name string, none bool) {
	v, ok := lbls[labelUseWaypoint]
	if !ok {
		return "", "", false
	}
	if v == "none" {
		return "", "", true
	}
	ns = defaultNS
	if o, ok := lbls[labelUseWaypointNS]; ok {
		ns = o
	}
	return ns, v, false
}

// waypointForTarget finds the waypoint an object (its labels, else its
// namespace's) asks for; nil when none, or when the named one is not a
// ready waypoint or refuses the namespace.
func (x *Index) waypointForTarget(ctx krt.HandlerContext, namespace string, lbls map[string]string) *waypoint {
	fetchNS := func() *corev1.Namespace {
		if n := krt.FetchOne(ctx, x.in.Namespaces, krt.FilterKey(namespace)); n != nil {
			return *n
		}
		return nil
	}
	wns, wname, none := useWaypoint(lbls, namespace)
	if none {
		return nil
	}
	if wname != "" {
		w := krt.FetchOne(ctx, x.waypoints, krt.FilterKey(wns+"/"+wname))
		if w == nil {
			return nil
		}
		var ns *corev1.Namespace
		if w.From == gatewayv1.NamespacesFromSelector {
			ns = fetchNS()
		}
		if !w.allows(ns, namespace) {
			return nil
		}
		return w
	}
	ns := fetchNS()
	if ns == nil {
		return nil
	}
	wns, wname, _ = useWaypoint(ns.Labels, namespace)
	if wname == "" {
		return nil
	}
	w := krt.FetchOne(ctx, x.waypoints, krt.FilterKey(wns+"/"+wname))
	if w == nil || !w.allows(ns, ns.Name) {
		return nil
	}
	return w
}

// waypointForService is the waypoint of a Service or ServiceEntry: none for
// waypoints and east-west gateways themselves, and only waypoints that take
// service traffic.
func (x *Index) waypointForService(ctx krt.HandlerContext, namespace string, lbls map[string]string) *waypoint {
	if m := lbls[labelGatewayManaged]; m == managedMeshController || m == managedEastWestGateway {
		return nil
	}
	w := x.waypointForTarget(ctx, namespace, lbls)
	if w == nil || (w.TrafficType != waypointTrafficService && w.TrafficType != waypointTrafficAll) {
		return nil
	}
	return w
}

// waypointForWorkload is the waypoint of a pod or WorkloadEntry: only
// waypoints that take workload traffic.
func (x *Index) waypointForWorkload(ctx krt.HandlerContext, namespace string, lbls map[string]string) *waypoint {
	w := x.waypointForTarget(ctx, namespace, lbls)
	if w == nil || (w.TrafficType != waypointTrafficWorkload && w.TrafficType != waypointTrafficAll) {
		return nil
	}
	return w
}

// computeWaypoint is the waypoint a workload sends through, or, for an
// instance of a waypoint, the application tunnel its clients use.
func (x *Index) computeWaypoint(ctx krt.HandlerContext, namespace string, lbls map[string]string,
) (*workloadapi.ApplicationTunnel, *waypoint) {
	if name := lbls[labelGatewayName]; name != "" {
		if inst := krt.FetchOne(ctx, x.waypoints, krt.FilterKey(namespace+"/"+name)); inst != nil {
			if inst.Binding != nil {
				return &workloadapi.ApplicationTunnel{Protocol: inst.Binding.Protocol, Port: inst.Binding.Port}, nil
			}
			return nil, nil
		}
	}
	return nil, x.waypointForWorkload(ctx, namespace, lbls)
}
