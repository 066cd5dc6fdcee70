package generators

import (
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
)

// headlessInstances are the addresses of each endpoint of a service's
// port, in shard order: a headless service's TCP and sniffed ports get an
// outbound listener per endpoint. Like Istio's (which reads them from
// the push context), the listeners follow the endpoints as of the last
// full push: a Kubernetes headless service's endpoint change is one,
// a WorkloadEntry change behind a ServiceEntry is not.
func (g *SidecarGenerators) headlessInstances(svc *model.Service, p *model.Port) [][]string {
	eps, _ := g.orderedEndpoints(svc)
	var out [][]string
	for _, ep := range portEndpoints(eps, p) {
		out = append(out, ep.Addresses)
	}
	return out
}

// headlessSelf is the proxy's address when its workload is an endpoint of
// a headless service (its own endpoint gets no outbound listener, as in
// Istio), else "": then its outbound listeners do not depend on its
// address and proxies keep sharing them.
func headlessSelf(proxy *model.Proxy, targets []listener.InboundTarget) string {
	if len(proxy.IPAddresses) == 0 {
		return ""
	}
	for _, t := range targets {
		for _, svc := range t.Services {
			if svc.Resolution == model.Passthrough && (svc.DefaultAddress == "" || svc.DefaultAddress == model.UnspecifiedIP) {
				return proxy.IPAddresses[0]
			}
		}
	}
	return ""
}
