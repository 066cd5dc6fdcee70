package generators

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/host"
)

// The hosts of a sidecar's route configuration of a port are its
// services' and, as Istio builds them (BuildSidecarOutboundVirtualHosts
// in pilot/pkg/networking/core/httproute.go, separateVSHostsAndServices
// and buildSidecarVirtualHostsForVirtualService in
// pilot/pkg/networking/core/route/route.go), also the hosts of the
// listener's VirtualServices that no service of the port has:
//
//   - on port 80, every VirtualService of the listener counts (Istio's
//     "hack to keep consistent with previous behavior": any name may be
//     routed on the HTTP port), so a VirtualService for a service of
//     another port, or for a name no registry knows, gets a virtual host
//     "<host>:80" answering to that name alone;
//   - on another port, a VirtualService counts when one of its hosts is a
//     service of the port (or matches one, wildcards either way), and its
//     other hosts get such a virtual host when one of those services
//     speaks HTTP there.
//
// A wildcard host counts as a service's when it matches a service of the
// port, else it is a host of its own; a Gateway API route's wildcard is
// always one of its own. Each name gets one virtual host, the first
// VirtualService's in the listener's order; one whose routes leave
// nothing for the port gets none (route.BuildVirtualHost).

// virtualServiceOnlyHosts returns those hosts of the listener's
// VirtualServices on the port, as HostOnly routes.
func virtualServiceOnlyHosts(l *model.EgressListener, port int) []route.ServiceRoutes {
	if l == nil || port <= 0 {
		return nil
	}
	onPort := map[string]*model.Port{}
	for _, svc := range l.Services() {
		if p, ok := svc.Ports.GetByPort(port); ok {
			onPort[strings.ToLower(svc.Hostname)] = p
		}
	}
	var out []route.ServiceRoutes
	taken := map[string]bool{}
	for _, vs := range l.VirtualServices() {
		spec, ok := vs.Spec.(*networking.VirtualService)
		if !ok || len(spec.Http) == 0 {
			continue
		}
		own, httpService := ownHosts(vs, spec, onPort)
		if port != 80 && !httpService {
			// not selected (no host is a service of the port), or no
			// service of it takes HTTP here: Istio builds no virtual host
			continue
		}
		for _, h := range own {
			if taken[h] {
				continue
			}
			taken[h] = true
			out = append(out, route.ServiceRoutes{Service: &model.Service{Hostname: h}, VirtualService: vs, HostOnly: true})
		}
	}
	return out
}

// ownHosts splits a VirtualService's hosts as Istio's
// separateVSHostsAndServices does: it returns those that are no service of
// the port (lower-cased), and whether one that is has an HTTP or sniffed
// port there.
func ownHosts(vs *config.Config, spec *networking.VirtualService, onPort map[string]*model.Port) (own []string, httpService bool) {
	gatewaySemantics := route.GatewaySemantics(vs)
	for _, h := range spec.Hosts {
		h = strings.ToLower(h)
		if !host.IsWildcard(h) {
			if p, ok := onPort[h]; ok {
				httpService = httpService || p.Protocol.IsHTTP() || p.Protocol.IsUnsupported()
			} else {
				own = append(own, h)
			}
			continue
		}
		if gatewaySemantics {
			own = append(own, h)
			continue
		}
		matched := false
		for svcHost, p := range onPort {
			if host.Matches(svcHost, h) {
				matched = true
				httpService = httpService || p.Protocol.IsHTTP() || p.Protocol.IsUnsupported()
			}
		}
		if !matched {
			own = append(own, h)
		}
	}
	return own, httpService
}
