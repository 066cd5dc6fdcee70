package validation

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
)

// seAutoAllocateLabel opts a ServiceEntry out of automatic VIP allocation
// when set to "false".
const seAutoAllocateLabel = "networking.istio.io/enable-autoallocate-ip"

// seUseWaypointLabel names the waypoint of a ServiceEntry ("none": no
// waypoint).
const seUseWaypointLabel = "istio.io/use-waypoint"

// ValidateServiceEntry checks a ServiceEntry.
func ValidateServiceEntry(cfg config.Config) (Warning, error) {
	se, ok := cfg.Spec.(*networking.ServiceEntry)
	if !ok {
		return nil, netCannotCast("ServiceEntry", cfg.Spec)
	}
	if se == nil {
		se = &networking.ServiceEntry{}
	}
	r := &Report{}
	spec := Path("spec")
	netCheckAlphaSelector(r, spec.Field("workloadSelector"), se.GetWorkloadSelector(), "service entry")
	if se.GetWorkloadSelector() != nil && se.GetEndpoints() != nil {
		r.Errorf(spec, "only one of WorkloadSelector or Endpoints is allowed in Service Entry")
	}
	seCheckHosts(r, spec.Field("hosts"), se.GetHosts())
	cidr := false
	for i, a := range se.GetAddresses() {
		cidr = cidr || strings.Contains(a, "/")
		r.Add(spec.Field("addresses").Index(i), CheckIPOrCIDR(a))
	}
	res := se.GetResolution()
	if cidr && res != networking.ServiceEntry_NONE && res != networking.ServiceEntry_STATIC {
		r.Errorf(spec.Field("addresses"), "CIDR addresses are allowed only for NONE/STATIC resolution types")
	}
	if _, known := networking.ServiceEntry_Location_name[int32(se.GetLocation())]; !known {
		r.Errorf(spec.Field("location"), "unknown location %d", se.GetLocation())
	}
	autoAllocate := cfg.Labels[seAutoAllocateLabel] != "false"
	ports := seCheckPorts(r, spec.Field("ports"), se, autoAllocate)
	w := cfg.Labels[seUseWaypointLabel]
	seCheckResolution(r, spec, se, ports, w != "" && !strings.EqualFold(w, "none"))
	if res != networking.ServiceEntry_NONE && len(se.GetHosts()) > 1 {
		for i, p := range se.GetPorts() {
			if p != nil && !netProtoIsHTTP(p.GetProtocol()) && !netProtoIsTLS(p.GetProtocol()) {
				r.Errorf(spec.Field("ports").Index(i), "multiple hosts provided with non-HTTP, non-TLS ports")
				break
			}
		}
	}
	checkExportTo(r, spec.Field("exportTo"), cfg.Namespace, se.GetExportTo(), true, false)
	return r.Result()
}

// seCheckHosts requires at least one host; wildcards are allowed but not
// "*" alone, and partial wildcards only warn.
func seCheckHosts(r *Report, p Path, hosts []string) {
	if len(hosts) == 0 {
		r.Errorf(p, "service entry must have at least one host")
	}
	for i, h := range hosts {
		hp := p.Index(i)
		if h == "*" {
			r.Errorf(hp, "invalid host %s: a service entry cannot match all hosts", h)
			continue
		}
		if err := netCheckWildcardHost(h); err != nil {
			r.Errorf(hp, "invalid host %q: %v", h, err)
			continue
		}
		if err := netCheckPartialWildcard(h); err != nil {
			r.Warnf(hp, "%v", err)
		}
	}
}

// seCheckPorts validates ports (unique numbers and names) and returns the
// set of declared port names.
func seCheckPorts(r *Report, p Path, se *networking.ServiceEntry, autoAllocate bool) map[string]bool {
	names := map[string]bool{}
	numbers := map[uint32]bool{}
	for i, port := range se.GetPorts() {
		pp := p.Index(i)
		if port == nil {
			r.Errorf(pp, "service entry port may not be null")
			continue
		}
		if names[port.GetName()] && port.GetName() != "" {
			r.Errorf(pp.Field("name"), "service entry port name %q already defined", port.GetName())
		}
		names[port.GetName()] = true
		if numbers[port.GetNumber()] {
			r.Errorf(pp.Field("number"), "service entry port %d already defined", port.GetNumber())
		}
		numbers[port.GetNumber()] = true
		r.Add(pp.Field("name"), netCheckPortName(port.GetName()))
		r.Add(pp.Field("protocol"), netCheckProtocol(port.GetProtocol()))
		r.Add(pp.Field("number"), CheckPort(port.GetNumber()))
		if port.GetTargetPort() != 0 {
			r.Add(pp.Field("targetPort"), CheckPort(port.GetTargetPort()))
		}
		if len(se.GetAddresses()) == 0 && !autoAllocate && (port.GetProtocol() == "" || strings.EqualFold(port.GetProtocol(), "TCP")) {
			r.Warnf(pp, "addresses are required for ports serving TCP (or unset) protocol when IP Autoallocation is not enabled")
		}
	}
	return names
}

// seCheckResolution applies the rules of the resolution mode to endpoints,
// hosts and the workload selector.
func seCheckResolution(r *Report, spec Path, se *networking.ServiceEntry, ports map[string]bool, useWaypoint bool) {
	res := se.GetResolution()
	ep := spec.Field("endpoints")
	switch res {
	case networking.ServiceEntry_NONE:
		if len(se.GetEndpoints()) != 0 {
			r.Errorf(ep, "no endpoints should be provided for resolution type none")
		}
		if se.GetWorkloadSelector() != nil {
			r.Warnf(spec.Field("workloadSelector"), "workloadSelector should not be set when resolution mode is NONE")
		}
	case networking.ServiceEntry_STATIC:
		if len(se.GetEndpoints()) == 0 && se.GetWorkloadSelector() == nil {
			r.Warnf(ep, "resolution STATIC without endpoints or workloadSelector: the service has no endpoints unless WorkloadEntries are added")
		}
		for i, e := range se.GetEndpoints() {
			if e == nil {
				r.Errorf(ep.Index(i), "endpoint cannot be nil")
				continue
			}
			netCheckWorkloadEntry(r, ep.Index(i), e, ports, false)
		}
	case networking.ServiceEntry_DNS, networking.ServiceEntry_DNS_ROUND_ROBIN:
		seCheckDNS(r, spec, se, ports)
	case networking.ServiceEntry_DYNAMIC_DNS:
		seCheckDynamicDNS(r, spec, se, useWaypoint)
	default:
		r.Errorf(spec.Field("resolution"), "unsupported resolution type %d", res)
	}
}

// seCheckDynamicDNS applies the rules of DYNAMIC_DNS resolution: wildcard
// hosts, no addresses or endpoints (the destination comes from the
// request), and protocols that carry the host name (HTTP, HTTP2, GRPC,
// TLS).
func seCheckDynamicDNS(r *Report, spec Path, se *networking.ServiceEntry, useWaypoint bool) {
	res := se.GetResolution()
	if len(se.GetHosts()) == 0 {
		r.Errorf(spec.Field("hosts"), "at least one wildcard host must be provided for resolution type %s", res)
	}
	for i, h := range se.GetHosts() {
		if !strings.HasPrefix(h, "*") {
			r.Errorf(spec.Field("hosts").Index(i), "host must be wildcarded for resolution mode %s (got %q)", res, h)
		}
	}
	if len(se.GetAddresses()) != 0 {
		r.Errorf(spec.Field("addresses"), "addresses cannot be set for resolution type %s. HTTP route domains will only be generated"+
			"from the hosts field values", res)
	}
	if len(se.GetEndpoints()) != 0 {
		r.Errorf(spec.Field("endpoints"), "endpoints cannot be set for resolution type %s. Destination IP address determined from hosts"+
			"field values", res)
	}
	for i, p := range se.GetPorts() {
		if p == nil {
			continue
		}
		switch c, _ := netParseProtocol(p.GetProtocol()); c {
		case "HTTP", "TLS", "GRPC", "HTTP2":
		default:
			r.Errorf(spec.Field("ports").Index(i).Field("protocol"), "only HTTP, TLS, GRPC, and HTTP2 protocols are supported for resolution type %s", res)
		}
	}
	switch se.GetLocation() {
	case networking.ServiceEntry_MESH_EXTERNAL:
	case networking.ServiceEntry_MESH_INTERNAL:
		if useWaypoint {
			r.Errorf(spec.Field("location"), "location MESH_INTERNAL with resolution type %s is not supported when using waypoints", res)
		}
	default:
		r.Errorf(spec.Field("location"), "location must be MESH_EXTERNAL or MESH_INTERNAL for resolution type %s", res)
	}
}

// seCheckDNS applies the rules of DNS and DNS_ROUND_ROBIN resolution.
func seCheckDNS(r *Report, spec Path, se *networking.ServiceEntry, ports map[string]bool) {
	res := se.GetResolution()
	ep := spec.Field("endpoints")
	if len(se.GetEndpoints()) == 0 {
		for i, h := range se.GetHosts() {
			if strings.Contains(h, "*") {
				r.Errorf(spec.Field("hosts").Index(i), "hosts must be FQDN or contain only prefix wildcards if no endpoints are provided for resolution mode %s, %v",
					res, netCheckFQDN(h))
			}
		}
	}
	if res == networking.ServiceEntry_DNS_ROUND_ROBIN && len(se.GetEndpoints()) > 1 {
		r.Errorf(ep, "there must only be 0 or 1 endpoint for resolution mode %s", res)
	}
	for i, e := range se.GetEndpoints() {
		if e == nil {
			r.Errorf(ep.Index(i), "endpoint cannot be nil")
			continue
		}
		netCheckWorkloadEntry(r, ep.Index(i), e, ports, true)
	}
	if se.GetWorkloadSelector() != nil {
		r.Warnf(spec.Field("workloadSelector"), "workloadSelector should not be set when resolution mode is %s", res)
	}
	if len(se.GetAddresses()) > 0 && len(se.GetHosts()) > 1 {
		for _, p := range se.GetPorts() {
			if p != nil && netProtoIsTCP(p.GetProtocol()) {
				r.Warnf(spec.Field("hosts"), "service entry can not have more than one host specified simultaneously with address and tcp port")
				break
			}
		}
	}
}
