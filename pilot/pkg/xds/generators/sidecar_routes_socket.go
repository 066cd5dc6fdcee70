package generators

import (
	"net"
	"sort"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// Route configurations of Sidecar egress listeners that are not the
// per-port ones every sidecar gets: a Unix socket's, an HTTP_PROXY port's
// and a sniffed service's on its own bind.

// egressRouteKind tells how a sidecar route name is built: a port number
// ("9080"), a Unix socket ("unix:///path"), or a sniffed service on a
// bind ("host:port"); ok false for names sidecars never ask for.
func egressRouteKind(name string) (port int, host string, ok bool) {
	if p, err := atoi(name); err == nil {
		return p, "", true
	}
	if strings.HasPrefix(name, listener.UnixPrefix) {
		return 0, "", true
	}
	h, ps, err := net.SplitHostPort(name)
	if err != nil {
		return 0, "", false
	}
	p, err := atoi(ps)
	return p, h, err == nil
}

// egressListenerForRoutes is the egress listener Istio builds a route
// name's routes from: the first on the port (on a socket, the one bound to
// it), else the first catch-all listener.
func egressListenerForRoutes(sc *model.SidecarScope, port int, name string) *model.EgressListener {
	for _, l := range sc.EgressListeners {
		p := l.Listener.GetPort()
		if p == nil {
			return l
		}
		if int(p.GetNumber()) == port && (port != 0 || l.Listener.GetBind() == name) {
			return l
		}
	}
	return nil
}

// isHTTPProxy: the listener is an HTTP_PROXY port.
func isHTTPProxy(l *model.EgressListener) bool {
	return l != nil && l.Listener.GetPort() != nil && protocol.Parse(l.Listener.GetPort().GetProtocol()) == protocol.HTTPProxy
}

// portlessRoutes are the routes of a listener that takes any port (a Unix
// socket or an HTTP_PROXY port), named name, as Istio builds routes for
// port 0 (httproute.go BuildSidecarOutboundVirtualHosts): every HTTP or sniffed port
// of every service of the listener gets a virtual host "<host>:<port>"
// whose domains carry the port too (each name, then the name with
// ":<port>"; on ports other than 80 only the names with a colon), a
// domain an earlier host took is left out, hosts are sorted by name and
// the catch-all comes last.
func portlessRoutes(name string, from *model.EgressListener, vsByHost map[string]*config.Config, opts route.Options) *routev3.RouteConfiguration {
	empty := route.BuildRouteConfiguration(0, nil, opts)
	rc := &routev3.RouteConfiguration{Name: name, ValidateClusters: empty.ValidateClusters,
		MaxDirectResponseBodySizeBytes: empty.MaxDirectResponseBodySizeBytes, IgnorePortInHostMatching: empty.IgnorePortInHostMatching}
	var hosts []*routev3.VirtualHost
	if from != nil {
		services := append([]*model.Service(nil), from.Services()...)
		sort.SliceStable(services, func(i, j int) bool { return services[i].Hostname < services[j].Hostname })
		taken := map[string]bool{}
		for _, svc := range services {
			for _, p := range svc.Ports {
				if !p.Protocol.IsHTTP() && !p.Protocol.IsUnsupported() {
					continue
				}
				one := route.BuildRouteConfiguration(p.Port, []route.ServiceRoutes{{Service: svc, VirtualService: vsByHost[svc.Hostname]}}, opts)
				vh := one.VirtualHosts[0]
				var domains []string
				for _, d := range vh.Domains {
					for _, dp := range []string{d, d + ":" + strconv.Itoa(p.Port)} {
						if taken[dp] {
							continue
						}
						taken[dp] = true
						// a port other than 80 keeps only the domains with
						// a colon (Istio's mergeAllVirtualHosts): those
						// with the port, and bracketed IPv6 addresses
						if p.Port == 80 || strings.Contains(dp, ":") {
							domains = append(domains, dp)
						}
					}
				}
				if len(domains) == 0 {
					continue
				}
				vh.Domains = domains
				hosts = append(hosts, vh)
			}
		}
	}
	sort.SliceStable(hosts, func(i, j int) bool { return hosts[i].Name < hosts[j].Name })
	rc.VirtualHosts = append(hosts, empty.VirtualHosts[len(empty.VirtualHosts)-1])
	return rc
}

// sniffedRoutes are the routes of a sniffed service on its own bind
// ("<host>:<port>"): the virtual host of that service and port alone,
// without a catch-all, matching any domain: the listener already picked
// the service by its address (Istio's getVirtualHostsForSniffedServicePort).
func sniffedRoutes(name, host string, port int, from *model.EgressListener, vsByHost map[string]*config.Config, opts route.Options) *routev3.RouteConfiguration {
	rc := route.BuildRouteConfiguration(port, nil, opts)
	rc.Name, rc.VirtualHosts = name, nil
	if from == nil {
		return rc
	}
	for _, svc := range from.Services() {
		if svc.Hostname != host {
			continue
		}
		for _, p := range svc.Ports {
			if p.Port == port && (p.Protocol.IsHTTP() || p.Protocol == protocol.Unsupported) {
				one := route.BuildRouteConfiguration(port, []route.ServiceRoutes{{Service: svc, VirtualService: vsByHost[svc.Hostname]}}, opts)
				vh := one.VirtualHosts[0]
				vh.Domains = []string{"*"}
				rc.VirtualHosts = []*routev3.VirtualHost{vh}
			}
		}
	}
	return rc
}
