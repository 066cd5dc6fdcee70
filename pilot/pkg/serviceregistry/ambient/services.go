package ambient

import (
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/workloadapi"
)

// portName is the names of a service port: its own, and for Kubernetes
// Services the named targetPort.
type portName struct {
	Port, Target string
}

// serviceInfo is one workload API Service with what workloads need to join
// it: the selector, the port names, and where it came from.
type serviceInfo struct {
	Service   *workloadapi.Service
	PortNames map[int32]portName
	Selector  map[string]string
	// FromServiceEntry: a ServiceEntry host, not a Kubernetes Service.
	FromServiceEntry bool
	// SourceNamespace/SourceName name the Service or ServiceEntry.
	SourceNamespace, SourceName string
	// Waypoint is the namespace/name of the service's waypoint ("" none).
	Waypoint string
	Created  time.Time
}

// ResourceName is the Address name: namespace/hostname.
func (s serviceInfo) ResourceName() string {
	return s.Service.GetNamespace() + "/" + s.Service.GetHostname()
}

// GetSelector makes serviceInfo a krt.LabelSelectorer (FilterSelects).
func (s serviceInfo) GetSelector() map[string]string { return s.Selector }

// Equals compares content.
func (s serviceInfo) Equals(o serviceInfo) bool {
	return proto.Equal(s.Service, o.Service) && maps.Equal(s.PortNames, o.PortNames) &&
		maps.Equal(s.Selector, o.Selector) && s.FromServiceEntry == o.FromServiceEntry &&
		s.SourceNamespace == o.SourceNamespace && s.SourceName == o.SourceName &&
		s.Waypoint == o.Waypoint && s.Created.Equal(o.Created)
}

// typedService is a serviceInfo keyed by its source, before services that
// share a hostname are reduced to one per namespace.
type typedService struct{ serviceInfo }

func (t typedService) ResourceName() string {
	kind := "Service"
	if t.FromServiceEntry {
		kind = "ServiceEntry"
	}
	return kind + "/" + t.SourceNamespace + "/" + t.SourceName + "/" + t.Service.GetHostname()
}

func (t typedService) Equals(o typedService) bool { return t.serviceInfo.Equals(o.serviceInfo) }

func serviceAddress(s serviceInfo) Address {
	ips := make([]string, 0, len(s.Service.Addresses))
	for _, a := range s.Service.Addresses {
		ips = append(ips, ipKey(a.Network, a.Address))
	}
	return Address{Name: s.ResourceName(), IPs: ips,
		Proto: &workloadapi.Address{Type: &workloadapi.Address_Service{Service: s.Service}}}
}

func (x *Index) buildServices() krt.Collection[serviceInfo] {
	fromServices := krt.NewCollection(x.in.Services, x.buildKubeService, x.krtOpts("ambient/kube-services")...)
	fromEntries := krt.NewManyCollection(x.in.ServiceEntries, x.buildServiceEntryServices,
		x.krtOpts("ambient/serviceentry-services")...)
	typed := krt.JoinCollection([]krt.Collection[typedService]{fromServices, fromEntries},
		x.krtOpts("ambient/typed-services")...)
	return krt.NewCollection(typed, func(ctx krt.HandlerContext, t typedService) *serviceInfo {
		host := t.Service.GetHostname()
		same := krt.Fetch(ctx, typed, krt.FilterGeneric(func(o any) bool {
			return o.(typedService).Service.GetHostname() == host
		}))
		return selectService(t, same)
	}, x.krtOpts("ambient/services")...)
}

// selectService reduces the services of one hostname to one per namespace
// (a Kubernetes Service wins, else the oldest ServiceEntry) and marks one
// of them canonical (a Service, else the oldest public ServiceEntry). It
// returns t's namespace's winner when t is the first (by key) of its
// namespace, so that one input produces each output.
func selectService(t typedService, same []typedService) *serviceInfo {
	better := func(a, b serviceInfo) bool { return a.Created.Before(b.Created) && b.FromServiceEntry }
	best := map[string]serviceInfo{}
	first := map[string]string{}
	for _, s := range same {
		ns := s.Service.GetNamespace()
		if _, ok := first[ns]; !ok {
			first[ns] = s.ResourceName()
		}
		if !s.FromServiceEntry {
			best[ns] = s.serviceInfo
			continue
		}
		if cur, ok := best[ns]; !ok || better(s.serviceInfo, cur) {
			best[ns] = s.serviceInfo
		}
	}
	ns := t.Service.GetNamespace()
	if first[ns] != t.ResourceName() {
		return nil
	}
	var canonical *serviceInfo
	for _, n := range slices.Sorted(maps.Keys(best)) {
		si := best[n]
		switch {
		case !si.FromServiceEntry:
			canonical = &si
		case si.Service.GetVisibility() == workloadapi.Service_NAMESPACE:
		default:
			if canonical == nil || better(si, *canonical) {
				canonical = &si
			}
		}
	}
	out := best[ns]
	if canonical != nil && canonical.Service.GetNamespace() == ns && !out.Service.GetCanonical() {
		out.Service = proto.CloneOf(out.Service)
		out.Service.Canonical = true
	}
	return &out
}

func (x *Index) fetchNamespace(ctx krt.HandlerContext, name string) *corev1.Namespace {
	if n := krt.FetchOne(ctx, x.in.Namespaces, krt.FilterKey(name)); n != nil {
		return *n
	}
	return nil
}

func (x *Index) buildKubeService(ctx krt.HandlerContext, s *corev1.Service) *typedService {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil // ztunnel forwards ExternalName DNS upstream
	}
	names := make(map[int32]portName, len(s.Spec.Ports))
	ports := make([]*workloadapi.Port, 0, len(s.Spec.Ports))
	for _, p := range s.Spec.Ports {
		names[p.Port] = portName{Port: p.Name, Target: p.TargetPort.StrVal}
		ports = append(ports, &workloadapi.Port{ServicePort: uint32(p.Port), TargetPort: uint32(p.TargetPort.IntVal),
			AppProtocol: kubeAppProtocol(p)})
	}
	network := x.fetchNetwork(ctx)
	vips := s.Spec.ClusterIPs
	if len(vips) == 0 {
		vips = []string{s.Spec.ClusterIP}
	}
	addrs := make([]*workloadapi.NetworkAddress, 0, len(vips))
	for _, ip := range vips {
		if ip == "" || ip == corev1.ClusterIPNone {
			continue
		}
		a, ok := networkAddress(ip, network)
		if !ok {
			scope.Warnf("service %s/%s: invalid cluster IP %q", s.Namespace, s.Name, ip)
			return nil
		}
		addrs = append(addrs, a)
	}
	ns := x.fetchNamespace(ctx, s.Namespace)
	var nsLabels, nsAnn map[string]string
	if ns != nil {
		nsLabels, nsAnn = ns.Labels, ns.Annotations
	}
	w := x.waypointForService(ctx, s.Namespace, s.Labels)

	var lb *workloadapi.LoadBalancing
	if itp := s.Spec.InternalTrafficPolicy; itp != nil && *itp == corev1.ServiceInternalTrafficPolicyLocal {
		lb = &workloadapi.LoadBalancing{Mode: workloadapi.LoadBalancing_STRICT,
			RoutingPreference: []workloadapi.LoadBalancing_Scope{workloadapi.LoadBalancing_NODE}}
	} else {
		lb = trafficDistribution(s.Spec.TrafficDistribution, s.Annotations, nsAnn)
	}
	if s.Spec.PublishNotReadyAddresses {
		if lb == nil {
			lb = &workloadapi.LoadBalancing{}
		}
		lb.HealthPolicy = workloadapi.LoadBalancing_ALLOW_ALL
	}
	fam := workloadapi.IPFamilies_AUTOMATIC
	switch {
	case len(s.Spec.IPFamilies) == 2:
		fam = workloadapi.IPFamilies_DUAL
	case len(s.Spec.IPFamilies) == 1 && s.Spec.IPFamilies[0] == corev1.IPv4Protocol:
		fam = workloadapi.IPFamilies_IPV4_ONLY
	case len(s.Spec.IPFamilies) == 1:
		fam = workloadapi.IPFamilies_IPV6_ONLY
	}
	svc := &workloadapi.Service{
		Name:          s.Name,
		Namespace:     s.Namespace,
		Hostname:      s.Name + "." + s.Namespace + ".svc." + x.opts.DomainSuffix,
		Addresses:     addrs,
		Ports:         ports,
		Waypoint:      w.address(),
		LoadBalancing: lb,
		IpFamilies:    fam,
		Canonical:     true,
	}
	info := serviceInfo{Service: svc, PortNames: names, Selector: s.Spec.Selector,
		SourceNamespace: s.Namespace, SourceName: s.Name, Created: s.CreationTimestamp.Time}
	if w != nil {
		info.Waypoint = w.ResourceName()
		svc.IngressUseWaypoint = ingressUseWaypoint(s.Labels, nsLabels)
	}
	return &typedService{info}
}

// trafficDistribution reads the preferred routing from the Service's
// trafficDistribution, else the annotation on it, else on its namespace.
func trafficDistribution(spec *string, svcAnn, nsAnn map[string]string) *workloadapi.LoadBalancing {
	mode := ""
	if spec != nil {
		switch *spec {
		case corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferClose:
			mode = "zone"
		case corev1.ServiceTrafficDistributionPreferSameNode:
			mode = "node"
		}
	}
	if mode == "" {
		for _, ann := range []map[string]string{svcAnn, nsAnn} {
			v := strings.ToLower(ann[annotationTrafficDist])
			if v == "" {
				continue
			}
			switch v {
			case strings.ToLower(corev1.ServiceTrafficDistributionPreferClose),
				strings.ToLower(corev1.ServiceTrafficDistributionPreferSameZone):
				mode = "zone"
			case strings.ToLower(corev1.ServiceTrafficDistributionPreferSameNode):
				mode = "node"
			default:
				mode = "any"
			}
			break
		}
	}
	scopes := []workloadapi.LoadBalancing_Scope{workloadapi.LoadBalancing_NETWORK, workloadapi.LoadBalancing_REGION,
		workloadapi.LoadBalancing_ZONE}
	switch mode {
	case "zone":
		return &workloadapi.LoadBalancing{Mode: workloadapi.LoadBalancing_FAILOVER, RoutingPreference: scopes}
	case "node":
		return &workloadapi.LoadBalancing{Mode: workloadapi.LoadBalancing_FAILOVER,
			RoutingPreference: append(scopes, workloadapi.LoadBalancing_SUBZONE, workloadapi.LoadBalancing_NODE)}
	}
	return nil
}

func ingressUseWaypoint(svcLabels, nsLabels map[string]string) bool {
	const l = "istio.io/ingress-use-waypoint"
	v, ok := svcLabels[l]
	if !ok {
		if v, ok = nsLabels[l]; !ok {
			return false
		}
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

func (x *Index) buildServiceEntryServices(ctx krt.HandlerContext, cfg config.Config) []typedService {
	se, _ := cfg.Spec.(*networking.ServiceEntry)
	if se == nil {
		return nil
	}
	w := x.waypointForService(ctx, cfg.Namespace, cfg.Labels)
	ns := x.fetchNamespace(ctx, cfg.Namespace)
	var nsLabels, nsAnn map[string]string
	if ns != nil {
		nsLabels, nsAnn = ns.Labels, ns.Annotations
	}
	network := x.fetchNetwork(ctx)
	if se.Resolution == networking.ServiceEntry_DYNAMIC_DNS && w == nil {
		scope.Warnf("ServiceEntry %s/%s has dynamic DNS resolution but no valid waypoint", cfg.Namespace, cfg.Name)
	}

	addrs := make([]*workloadapi.NetworkAddress, 0, len(se.Addresses))
	for _, a := range se.Addresses {
		na, ok := cidrAddress(a, network)
		if !ok {
			return nil
		}
		addrs = append(addrs, na)
	}
	var allocated map[string][]netip.Addr
	if autoAllocate(cfg, se) {
		allocated = allocatedAddresses(cfg)
	}
	names := make(map[int32]portName, len(se.Ports))
	ports := make([]*workloadapi.Port, 0, len(se.Ports))
	for _, p := range se.Ports {
		names[int32(p.Number)] = portName{Port: p.Name}
		target := p.TargetPort
		if target == 0 {
			target = p.Number
		}
		ports = append(ports, &workloadapi.Port{ServicePort: p.Number, TargetPort: target,
			AppProtocol: appProtocol(protocol.Parse(p.Protocol))})
	}
	var lb *workloadapi.LoadBalancing
	if se.Resolution == networking.ServiceEntry_NONE {
		lb = &workloadapi.LoadBalancing{Mode: workloadapi.LoadBalancing_PASSTHROUGH,
			HealthPolicy: workloadapi.LoadBalancing_ALLOW_ALL}
	} else {
		lb = trafficDistribution(nil, cfg.Annotations, nsAnn)
	}
	out := make([]typedService, 0, len(se.Hosts))
	for _, h := range se.Hosts {
		hostAddrs := addrs
		wildcard := strings.HasPrefix(h, "*")
		if len(hostAddrs) == 0 && se.Resolution != networking.ServiceEntry_NONE &&
			(!wildcard || se.Resolution == networking.ServiceEntry_DYNAMIC_DNS) {
			for _, ip := range allocated[h] {
				hostAddrs = append(hostAddrs, &workloadapi.NetworkAddress{Network: network, Address: ip.AsSlice()})
			}
		}
		svc := &workloadapi.Service{
			Name:            cfg.Name,
			Namespace:       cfg.Namespace,
			Hostname:        h,
			Addresses:       hostAddrs,
			Ports:           ports,
			Waypoint:        w.address(),
			SubjectAltNames: se.SubjectAltNames,
			LoadBalancing:   proto.CloneOf(lb),
		}
		info := serviceInfo{Service: svc, PortNames: names, Selector: se.GetWorkloadSelector().GetLabels(),
			FromServiceEntry: true, SourceNamespace: cfg.Namespace, SourceName: cfg.Name, Created: cfg.CreationTimestamp}
		if w != nil {
			info.Waypoint = w.ResourceName()
			svc.IngressUseWaypoint = ingressUseWaypoint(cfg.Labels, nsLabels)
		}
		out = append(out, typedService{info})
	}
	return out
}

// autoAllocate reports whether the ServiceEntry uses the addresses the IP
// allocator wrote to its status (Istio's PILOT_ENABLE_IP_AUTOALLOCATE,
// on by default).
func autoAllocate(cfg config.Config, se *networking.ServiceEntry) bool {
	if se.Resolution == networking.ServiceEntry_NONE || len(se.Addresses) > 0 {
		return false
	}
	if v, ok := cfg.Labels[labelAutoAllocate]; ok && strings.EqualFold(v, "false") {
		return false
	}
	return true
}

func allocatedAddresses(cfg config.Config) map[string][]netip.Addr {
	st, _ := cfg.Status.(*networking.ServiceEntryStatus)
	out := map[string][]netip.Addr{}
	for _, a := range st.GetAddresses() {
		ip, err := netip.ParseAddr(a.GetValue())
		if err != nil {
			continue
		}
		out[a.GetHost()] = append(out[a.GetHost()], ip)
	}
	return out
}
