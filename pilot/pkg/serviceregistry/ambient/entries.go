package ambient

import (
	"maps"
	"net/netip"

	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/workloadapi"
)

// This file builds the workloads that are not pods: WorkloadEntries, the
// endpoints of ServiceEntries, and EndpointSlice endpoints that name no pod.

// entryWorkload fills the fields a WorkloadEntry (or a ServiceEntry
// endpoint) gives a workload.
func entryWorkload(w *workloadapi.Workload, we *networking.WorkloadEntry) {
	if we.Weight > 0 {
		w.Capacity = wrapperspb.UInt32(we.Weight)
	}
	if a, err := netip.ParseAddr(we.Address); err == nil {
		w.Addresses = [][]byte{a.AsSlice()}
	} else {
		w.Hostname = we.Address
	}
	w.Locality = localityOf(we.Locality)
}

func (x *Index) buildWorkloadEntryWorkload(ctx krt.HandlerContext, cfg config.Config) *Address {
	spec, _ := cfg.Spec.(*networking.WorkloadEntry)
	if spec == nil {
		return nil
	}
	// Labels may be in the spec and the metadata; the metadata wins.
	lbls := cfg.Labels
	if spec.Labels != nil {
		lbls = maps.Clone(spec.Labels)
		maps.Copy(lbls, cfg.Labels)
	}
	mesh := x.fetchMesh(ctx)
	policies := x.workloadPolicies(ctx, mesh, lbls, cfg.Namespace)
	tunnel, wp := x.computeWaypoint(ctx, cfg.Namespace, lbls)
	services := krt.Fetch(ctx, x.services, krt.FilterNamespace(cfg.Namespace), krt.FilterSelects(lbls))
	network := x.fetchNetwork(ctx)
	if spec.Network != "" {
		network = spec.Network
	}
	w := &workloadapi.Workload{
		Uid:                   workloadEntryUID(x.opts.ClusterID, cfg.Namespace, cfg.Name),
		Name:                  cfg.Name,
		Namespace:             cfg.Namespace,
		Network:               network,
		NetworkGateway:        x.networkGatewayAddress(ctx, network),
		ClusterId:             x.opts.ClusterID,
		ServiceAccount:        spec.ServiceAccount,
		Services:              entryServices(spec.Ports, services),
		AuthorizationPolicies: policies,
		Status:                workloadapi.WorkloadStatus_HEALTHY,
		Waypoint:              wp.address(),
		ApplicationTunnel:     tunnel,
		TrustDomain:           pickTrustDomain(mesh),
		WorkloadType:          workloadapi.WorkloadType_POD,
	}
	entryWorkload(w, spec)
	w.WorkloadName = cfg.Name
	if g, ok := cfg.Annotations[annotationAutoRegGroup]; ok {
		w.WorkloadName = g
	} else if wn, ok := lbls[labelWorkloadName]; ok {
		w.WorkloadName = wn
	}
	w.CanonicalName, w.CanonicalRevision = canonicalService(lbls, w.WorkloadName)
	setTunnelProtocol(lbls, cfg.Annotations, w)
	a := workloadAddress(w)
	return &a
}

// entryServices is the services map of a WorkloadEntry-like workload.
// Service ports with a named targetPort take the entry's port of that name
// (left out when it has none), others the entry's port named like the
// service port; ServiceEntry ports match by name, falling back to the
// service port.
func entryServices(ports map[string]uint32, services []serviceInfo) map[string]*workloadapi.PortList {
	out := make(map[string]*workloadapi.PortList, len(services))
	for _, s := range services {
		pl := &workloadapi.PortList{}
		out[s.ResourceName()] = pl
		for _, port := range s.Service.Ports {
			target := port.TargetPort
			n, named := s.PortNames[int32(port.ServicePort)]
			switch {
			case named && !s.FromServiceEntry && n.Target != "":
				tv, ok := ports[n.Target]
				if !ok {
					continue
				}
				target = tv
			case named && !s.FromServiceEntry:
				if tv, ok := ports[n.Port]; ok {
					target = tv
				}
			case named:
				if tv, ok := ports[n.Port]; ok {
					target = tv
				} else if target == 0 {
					target = port.ServicePort
				}
			}
			pl.Ports = append(pl.Ports, &workloadapi.Port{ServicePort: port.ServicePort, TargetPort: target})
		}
	}
	return out
}

// buildServiceEntryWorkloads are the workloads of a ServiceEntry's inline
// endpoints; a DNS ServiceEntry without endpoints or selector gets one
// workload per host, addressed by the hostname.
func (x *Index) buildServiceEntryWorkloads(ctx krt.HandlerContext, cfg config.Config) []Address {
	se, _ := cfg.Spec.(*networking.ServiceEntry)
	if se == nil {
		return nil
	}
	eps := se.Endpoints
	implicit := len(eps) == 0 && se.WorkloadSelector == nil &&
		(se.Resolution == networking.ServiceEntry_DNS || se.Resolution == networking.ServiceEntry_DNS_ROUND_ROBIN ||
			se.Resolution == networking.ServiceEntry_DYNAMIC_DNS)
	if len(eps) == 0 && !implicit {
		return nil
	}
	// The services this ServiceEntry kept (hosts another source won are
	// gone).
	all := krt.Fetch(ctx, x.services, krt.FilterNamespace(cfg.Namespace), krt.FilterGeneric(func(o any) bool {
		s := o.(serviceInfo)
		return s.FromServiceEntry && s.SourceName == cfg.Name
	}))
	if len(all) == 0 {
		scope.Debugf("ServiceEntry %s/%s lost every host to another source; its endpoints are not sent",
			cfg.Namespace, cfg.Name)
		return nil
	}
	if implicit {
		eps = make([]*networking.WorkloadEntry, len(all))
		for i, s := range all {
			eps[i] = &networking.WorkloadEntry{Address: s.Service.GetHostname()}
		}
	}
	mesh := x.fetchMesh(ctx)
	out := make([]Address, 0, len(eps))
	for i, we := range eps {
		services := all
		if implicit {
			services = all[i : i+1]
		}
		policies := x.workloadPolicies(ctx, mesh, cfg.Labels, cfg.Namespace)
		var tunnel *workloadapi.ApplicationTunnel
		var wp *waypoint
		if !implicit {
			tunnel, wp = x.computeWaypoint(ctx, cfg.Namespace, we.Labels)
		}
		network := x.fetchNetwork(ctx)
		if we.Network != "" {
			network = we.Network
		}
		w := &workloadapi.Workload{
			Uid:                   serviceEntryUID(x.opts.ClusterID, cfg.Namespace, cfg.Name, we.Address),
			Name:                  cfg.Name,
			Namespace:             cfg.Namespace,
			Network:               network,
			NetworkGateway:        x.networkGatewayAddress(ctx, network),
			ClusterId:             x.opts.ClusterID,
			ServiceAccount:        we.ServiceAccount,
			Services:              entryServices(we.Ports, services),
			AuthorizationPolicies: policies,
			Status:                workloadapi.WorkloadStatus_HEALTHY,
			Waypoint:              wp.address(),
			ApplicationTunnel:     tunnel,
			TrustDomain:           pickTrustDomain(mesh),
			WorkloadName:          cfg.Name,
			WorkloadType:          workloadapi.WorkloadType_POD,
		}
		entryWorkload(w, we)
		w.CanonicalName, w.CanonicalRevision = canonicalService(cfg.Labels, w.WorkloadName)
		setTunnelProtocol(cfg.Labels, cfg.Annotations, w)
		out = append(out, workloadAddress(w))
	}
	return out
}

// buildEndpointSliceWorkloads are the endpoints of a Service's
// EndpointSlice that name no pod (hand-written endpoints): opaque
// host-network workloads with the service's ports.
func (x *Index) buildEndpointSliceWorkloads(ctx krt.HandlerContext, es *discoveryv1.EndpointSlice) []Address {
	name, ok := es.Labels[labelServiceName]
	if !ok || es.AddressType == discoveryv1.AddressTypeFQDN {
		return nil
	}
	opaque := false
	for _, ep := range es.Endpoints {
		if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" {
			opaque = true
			break
		}
	}
	if !opaque {
		return nil
	}
	mesh := x.fetchMesh(ctx)
	key := es.Namespace + "/" + name + "." + es.Namespace + ".svc." + x.opts.DomainSuffix
	svc := krt.FetchOne(ctx, x.services, krt.FilterKey(key), krt.FilterGeneric(func(o any) bool {
		return !o.(serviceInfo).FromServiceEntry
	}))
	if svc == nil {
		return nil
	}
	pl := &workloadapi.PortList{Ports: make([]*workloadapi.Port, 0, len(es.Ports))}
	for _, p := range es.Ports {
		if p.Name == nil || p.Port == nil || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		for _, sp := range svc.Service.Ports {
			if svc.PortNames[int32(sp.ServicePort)].Port != *p.Name {
				continue
			}
			pl.Ports = append(pl.Ports, &workloadapi.Port{ServicePort: sp.ServicePort, TargetPort: uint32(*p.Port)})
			break
		}
	}
	network := x.fetchNetwork(ctx)
	seen := map[string]bool{}
	var out []Address
	for _, ep := range es.Endpoints {
		if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
			continue // the pod's own workload carries it
		}
		if len(ep.Addresses) == 0 {
			continue
		}
		first := ep.Addresses[0]
		if seen[first] {
			scope.Warnf("EndpointSlice %s/%s: address %s twice", es.Namespace, es.Name, first)
			continue
		}
		seen[first] = true
		addrs := make([][]byte, 0, len(ep.Addresses))
		valid := true
		for _, a := range ep.Addresses {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				scope.Warnf("EndpointSlice %s/%s: invalid address %q", es.Namespace, es.Name, a)
				valid = false
				break
			}
			addrs = append(addrs, ip.AsSlice())
		}
		if !valid {
			continue
		}
		status := workloadapi.WorkloadStatus_UNHEALTHY
		if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
			status = workloadapi.WorkloadStatus_HEALTHY
		}
		w := &workloadapi.Workload{
			Uid:         endpointSliceUID(x.opts.ClusterID, es.Namespace, es.Name, first),
			Name:        es.Name,
			Namespace:   es.Namespace,
			Addresses:   addrs,
			Network:     network,
			TrustDomain: pickTrustDomain(mesh),
			Services:    map[string]*workloadapi.PortList{key: pl},
			Status:      status,
			ClusterId:   x.opts.ClusterID,
			NetworkMode: workloadapi.NetworkMode_HOST_NETWORK,
		}
		out = append(out, workloadAddress(w))
	}
	return out
}
