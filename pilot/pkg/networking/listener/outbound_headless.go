package listener

import (
	"net/netip"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// instanceBinds are the addresses a headless service's port listens on
// when the proxy reaches it by redirection, as Istio builds them: a TCP or
// sniffed port of a service without a VIP (resolution NONE) gets a
// listener per endpoint, on the endpoint's primary address, so that each
// endpoint keeps its own chains; HTTP ports share the wildcard and pick
// the host by RDS instead. ok false: the port takes the wildcard like any
// other. The proxy's own endpoint is left out (its traffic to itself is
// inbound). Istio falls back to the wildcard only for a ServiceEntry with
// no endpoints and no workload selector; a Kubernetes Service without
// endpoints gets no listener at all, as traffic to it cannot work.
func instanceBinds(svc *model.Service, p *model.Port, o Options) (binds []string, ok bool) {
	if svc.Resolution != model.Passthrough || hasVIP(svc) || !(p.Protocol.IsTCP() || p.Protocol.IsUnsupported()) {
		return nil, false
	}
	var endpoints [][]string
	if o.Instances != nil {
		endpoints = o.Instances(svc, p)
	}
	if svc.Attributes.ServiceRegistry != model.Kubernetes && len(endpoints) == 0 && svc.Attributes.LabelSelectors == nil {
		return nil, false
	}
	binds = []string{}
	for _, addrs := range endpoints {
		if len(addrs) == 0 || !allIPs(addrs) || addrs[0] == o.SelfIP {
			// a ServiceEntry endpoint may be a hostname: no listener
			continue
		}
		binds = append(binds, addrs[0])
	}
	return binds, true
}

func allIPs(addrs []string) bool {
	for _, a := range addrs {
		if _, err := netip.ParseAddr(a); err != nil {
			return false
		}
	}
	return true
}
