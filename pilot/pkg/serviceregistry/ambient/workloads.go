package ambient

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/workloadapi"
)

// buildWorkloads returns the workload collections, one per source: pods,
// WorkloadEntries, ServiceEntry endpoints, EndpointSlice endpoints that
// are not pods, and network gateways. Their keys (uids) never collide.
func (x *Index) buildWorkloads() []krt.Collection[Address] {
	return []krt.Collection[Address]{
		krt.NewCollection(x.in.Pods, x.buildPodWorkload, x.krtOpts("ambient/pod-workloads")...),
		krt.NewCollection(x.in.WorkloadEntries, x.buildWorkloadEntryWorkload,
			x.krtOpts("ambient/workloadentry-workloads")...),
		krt.NewManyCollection(x.in.ServiceEntries, x.buildServiceEntryWorkloads,
			x.krtOpts("ambient/serviceentry-workloads")...),
		krt.NewManyCollection(x.in.EndpointSlices, x.buildEndpointSliceWorkloads,
			x.krtOpts("ambient/endpointslice-workloads")...),
		krt.NewCollection(x.netGateways, x.buildGatewayWorkload, x.krtOpts("ambient/network-gateway-workloads")...),
	}
}

func workloadAddress(w *workloadapi.Workload) Address {
	ips := make([]string, 0, len(w.Addresses))
	for _, a := range w.Addresses {
		ips = append(ips, ipKey(w.Network, a))
	}
	return Address{Name: w.Uid, IPs: ips, Proto: &workloadapi.Address{Type: &workloadapi.Address_Workload{Workload: w}}}
}

// buildPodWorkload is the workload of a pod with an IP that has not
// terminated, enrolled in ambient or not (ztunnel needs every pod to know
// how to reach it).
func (x *Index) buildPodWorkload(ctx krt.HandlerContext, p *corev1.Pod) *Address {
	if podTerminal(p) {
		return nil
	}
	ips := podIPs(p)
	if len(ips) == 0 {
		return nil
	}
	mesh := x.fetchMesh(ctx)
	policies := x.workloadPolicies(ctx, mesh, p.Labels, p.Namespace)
	services := krt.Fetch(ctx, x.services, krt.FilterNamespace(p.Namespace), krt.FilterSelects(p.Labels))
	services = append(services, x.servicesWithoutSelectors(ctx, p, services)...)
	status := workloadapi.WorkloadStatus_HEALTHY
	if !podReady(p) || p.DeletionTimestamp != nil {
		status = workloadapi.WorkloadStatus_UNHEALTHY
	}
	network := x.fetchNetwork(ctx)
	tunnel, wp := x.computeWaypoint(ctx, p.Namespace, p.Labels)

	w := &workloadapi.Workload{
		Uid:                   podUID(x.opts.ClusterID, p.Namespace, p.Name),
		Name:                  p.Name,
		Namespace:             p.Namespace,
		Network:               network,
		NetworkGateway:        x.networkGatewayAddress(ctx, network),
		ClusterId:             x.opts.ClusterID,
		Addresses:             ips,
		ServiceAccount:        p.Spec.ServiceAccountName,
		Waypoint:              wp.address(),
		Node:                  p.Spec.NodeName,
		ApplicationTunnel:     tunnel,
		Services:              podServices(p, services),
		AuthorizationPolicies: policies,
		Status:                status,
		TrustDomain:           pickTrustDomain(mesh),
		Locality:              x.podLocality(ctx, p),
		WorkloadName:          podWorkloadName(p),
		WorkloadType:          workloadapi.WorkloadType_POD,
	}
	if p.Spec.HostNetwork {
		w.NetworkMode = workloadapi.NetworkMode_HOST_NETWORK
	}
	w.CanonicalName, w.CanonicalRevision = canonicalService(p.Labels, w.WorkloadName)
	setTunnelProtocol(p.Labels, p.Annotations, w)
	a := workloadAddress(w)
	return &a
}

func (x *Index) podLocality(ctx krt.HandlerContext, p *corev1.Pod) *workloadapi.Locality {
	n := krt.FetchOne(ctx, x.nodes, krt.FilterKey(p.Spec.NodeName))
	if n == nil {
		if p.Spec.NodeName != "" {
			scope.Debugf("no node %q for pod %s/%s", p.Spec.NodeName, p.Namespace, p.Name)
		}
		return nil
	}
	return n.Locality
}

// servicesWithoutSelectors are the Kubernetes Services whose EndpointSlices
// name the pod (by targetRef) and that were not found by selector: services
// without selectors whose endpoints someone wrote by hand.
func (x *Index) servicesWithoutSelectors(ctx krt.HandlerContext, p *corev1.Pod, found []serviceInfo) []serviceInfo {
	seen := make(map[string]bool, len(found))
	for _, s := range found {
		seen[s.Service.GetHostname()] = true
	}
	slices := krt.Fetch(ctx, x.in.EndpointSlices, krt.FilterNamespace(p.Namespace), krt.FilterGeneric(func(o any) bool {
		return slicePointsAt(o.(*discoveryv1.EndpointSlice), p)
	}))
	var out []serviceInfo
	for _, es := range slices {
		name := es.Labels[labelServiceName]
		host := name + "." + es.Namespace + ".svc." + x.opts.DomainSuffix
		if seen[host] {
			continue
		}
		seen[host] = true
		svc := krt.FetchOne(ctx, x.services, krt.FilterKey(es.Namespace+"/"+host), krt.FilterGeneric(func(o any) bool {
			return !o.(serviceInfo).FromServiceEntry
		}))
		if svc != nil {
			out = append(out, *svc)
		}
	}
	return out
}

// slicePointsAt reports whether a service's slice has an endpoint whose
// targetRef is the pod.
func slicePointsAt(es *discoveryv1.EndpointSlice, p *corev1.Pod) bool {
	if es.AddressType == discoveryv1.AddressTypeFQDN {
		return false
	}
	if _, ok := es.Labels[labelServiceName]; !ok {
		return false
	}
	for _, ep := range es.Endpoints {
		if r := ep.TargetRef; r != nil && r.Kind == "Pod" && r.Namespace == p.Namespace && r.Name == p.Name &&
			r.UID == p.UID {
			return true
		}
	}
	return false
}

// podServices is the services map of a pod workload: for each service its
// ports, named target ports resolved against the pod's container ports (a
// port whose named target the pod lacks is left out).
func podServices(p *corev1.Pod, services []serviceInfo) map[string]*workloadapi.PortList {
	out := make(map[string]*workloadapi.PortList, len(services))
	for _, s := range services {
		pl := &workloadapi.PortList{Ports: make([]*workloadapi.Port, 0, len(s.Service.Ports))}
		out[s.ResourceName()] = pl
		for _, port := range s.Service.Ports {
			target := port.TargetPort
			if n, ok := s.PortNames[int32(port.ServicePort)]; ok {
				switch {
				case n.Target != "":
					tp, ok := findPortName(p, n.Target)
					if !ok {
						continue
					}
					target = uint32(tp)
				case s.FromServiceEntry && n.Port != "":
					if tp, ok := findPortName(p, n.Port); ok {
						target = uint32(tp)
					} else if target == 0 {
						target = port.ServicePort
					}
				}
			}
			pl.Ports = append(pl.Ports, &workloadapi.Port{ServicePort: port.ServicePort, TargetPort: target})
		}
	}
	return out
}
