package serviceentry

import (
	"fmt"
	"net/netip"
	"strings"

	"istio.io/api/label"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// resolutionOf maps the ServiceEntry resolution to the model's.
func resolutionOf(r networking.ServiceEntry_Resolution) model.Resolution {
	switch r {
	case networking.ServiceEntry_NONE:
		return model.Passthrough
	case networking.ServiceEntry_DNS:
		return model.DNSLB
	case networking.ServiceEntry_DNS_ROUND_ROBIN:
		return model.DNSRoundRobinLB
	case networking.ServiceEntry_DYNAMIC_DNS:
		return model.DynamicDNS
	}
	return model.ClientSideLB
}

func isDNS(r networking.ServiceEntry_Resolution) bool {
	return r == networking.ServiceEntry_DNS || r == networking.ServiceEntry_DNS_ROUND_ROBIN
}

// validPorts returns the ports with a usable number; the others (0, above
// 65535, or repeating an earlier number) are dropped with a problem.
func validPorts(se *networking.ServiceEntry) ([]*networking.ServicePort, []string) {
	var out []*networking.ServicePort
	var problems []string
	seen := map[uint32]bool{}
	for i, p := range se.GetPorts() {
		switch {
		case p.GetNumber() == 0 || p.GetNumber() > 65535:
			problems = append(problems, fmt.Sprintf("spec.ports[%d] (%q): port %d is outside 1-65535; port ignored", i, p.GetName(), p.GetNumber()))
		case seen[p.GetNumber()]:
			problems = append(problems, fmt.Sprintf("spec.ports[%d] (%q): port %d is declared twice; the first declaration is used", i, p.GetName(), p.GetNumber()))
		default:
			seen[p.GetNumber()] = true
			out = append(out, p)
		}
	}
	return out, problems
}

// vipAddresses parses spec.addresses: IPs and CIDRs (a full-length prefix
// is read as its IP); anything else is dropped with a problem.
func vipAddresses(se *networking.ServiceEntry) ([]string, []string) {
	var out, problems []string
	for i, a := range se.GetAddresses() {
		if ip, err := netip.ParseAddr(a); err == nil {
			out = append(out, ip.String())
			continue
		}
		if p, err := netip.ParsePrefix(a); err == nil {
			if p.Bits() == p.Addr().BitLen() {
				out = append(out, p.Addr().String())
			} else {
				out = append(out, a)
			}
			continue
		}
		problems = append(problems, fmt.Sprintf("spec.addresses[%d]: %q is neither an IP nor a CIDR; address ignored", i, a))
	}
	return out, problems
}

// autoAllocated returns the addresses allocated to each host in the
// object's status, when the ServiceEntry may use them: no spec addresses, a
// resolution other than NONE, and allocation not disabled by label.
func autoAllocated(cfg config.Config, se *networking.ServiceEntry) map[string][]netip.Addr {
	if len(se.GetAddresses()) > 0 || se.GetResolution() == networking.ServiceEntry_NONE ||
		cfg.Labels[label.NetworkingEnableAutoallocateIp.Name] == "false" {
		return nil
	}
	st, ok := cfg.Status.(*networking.ServiceEntryStatus)
	if !ok || st == nil {
		return nil
	}
	out := map[string][]netip.Addr{}
	for _, a := range st.GetAddresses() {
		if ip, err := netip.ParseAddr(a.GetValue()); err == nil && !strings.HasPrefix(a.GetHost(), "*") {
			out[a.GetHost()] = append(out[a.GetHost()], ip)
		}
	}
	return out
}

// convertServices builds one Service per host of a ServiceEntry.
func convertServices(cfg config.Config, se *networking.ServiceEntry, ports []*networking.ServicePort, clusterID string) ([]*model.Service, []string) {
	addrs, problems := vipAddresses(se)
	resolution := resolutionOf(se.GetResolution())
	svcPorts := make(model.PortList, 0, len(ports))
	var passthrough map[uint32]uint32
	for _, p := range ports {
		svcPorts = append(svcPorts, &model.Port{Name: p.GetName(), Port: int(p.GetNumber()), Protocol: protocol.Parse(p.GetProtocol())})
		if resolution == model.Passthrough && p.GetTargetPort() != 0 {
			if passthrough == nil {
				passthrough = map[uint32]uint32{}
			}
			passthrough[p.GetNumber()] = p.GetTargetPort()
		}
	}
	var selector map[string]string
	if se.GetWorkloadSelector() != nil {
		selector = se.GetWorkloadSelector().GetLabels()
	}
	auto := autoAllocated(cfg, se)
	var out []*model.Service
	seen := map[string]bool{}
	for _, h := range se.GetHosts() {
		if seen[h] {
			continue
		}
		seen[h] = true
		svc := &model.Service{
			Hostname:        h,
			CreationTime:    cfg.CreationTimestamp,
			ResourceVersion: cfg.ResourceVersion,
			Ports:           svcPorts,
			ServiceAccounts: se.GetSubjectAltNames(),
			Resolution:      resolution,
			MeshExternal:    se.GetLocation() == networking.ServiceEntry_MESH_EXTERNAL,
			DefaultAddress:  model.UnspecifiedIP,
			Attributes: model.ServiceAttributes{
				ServiceRegistry:        model.External,
				Name:                   h,
				Namespace:              cfg.Namespace,
				Labels:                 cfg.Labels,
				ExportTo:               model.NewExportTo(se.GetExportTo()...),
				LabelSelectors:         selector,
				PassthroughTargetPorts: passthrough,
				K8sAttributes:          model.K8sAttributes{ObjectName: cfg.Name},
			},
		}
		if len(addrs) > 0 {
			svc.DefaultAddress = addrs[0]
			svc.ClusterVIPs = model.AddressMap{Addresses: map[string][]string{clusterID: addrs}}
		}
		for _, a := range auto[h] {
			if a.Is4() {
				svc.AutoAllocatedIPv4Address = a.String()
			} else {
				svc.AutoAllocatedIPv6Address = a.String()
			}
		}
		out = append(out, svc)
	}
	if len(out) == 0 {
		problems = append(problems, "spec.hosts is empty; the ServiceEntry defines no service")
	}
	return out, problems
}
