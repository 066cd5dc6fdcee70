package generators

import (
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// inboundTargets are the proxy's inbound ports: its Sidecar's ingress
// listeners when it has any (they replace the ports of the services that
// select the workload, as in Istio), else those services' ports.
func (g *SidecarGenerators) inboundTargets(push *model.PushContext, proxy *model.Proxy) []listener.InboundTarget {
	byServices := g.proxyTargets(proxy)
	sc := push.SidecarScope(proxy)
	ingress := sc.IngressListeners()
	if len(ingress) == 0 {
		return byServices
	}
	var out []listener.InboundTarget
	for _, l := range ingress {
		port := int(l.GetPort().GetNumber())
		t := listener.InboundTarget{Port: port, Protocol: protocol.Parse(l.GetPort().GetProtocol()), ServicePort: port}
		// the services behind the port, for telemetry; a Sidecar-named
		// placeholder when none targets it
		for _, st := range byServices {
			if st.Port == port {
				t.Services, t.ServicePort = st.Services, st.ServicePort
			}
		}
		if len(t.Services) == 0 {
			t.Services = []*model.Service{{Hostname: sc.Name + "." + sc.Namespace,
				Attributes: model.ServiceAttributes{Name: sc.Name, Namespace: sc.Namespace}}}
		}
		t.Endpoint, t.EndpointPort = ingressEndpoint(l.GetDefaultEndpoint(), proxy)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// ingressEndpoint resolves a defaultEndpoint: 127.0.0.1:<port> (or [::1])
// is loopback, 0.0.0.0:<port> (or [::]) the proxy's own IP of that family,
// unix://<path> a socket; empty: the original destination.
func ingressEndpoint(ep string, proxy *model.Proxy) (string, int) {
	if ep == "" {
		return "", 0
	}
	if strings.HasPrefix(ep, "unix://") {
		return ep, 0
	}
	host, p, err := net.SplitHostPort(ep)
	if err != nil {
		return "", 0
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0
	}
	v6 := strings.Contains(host, ":")
	switch host {
	case "0.0.0.0", "::":
		for _, ip := range proxy.IPAddresses {
			if strings.Contains(ip, ":") == v6 {
				return ip, port
			}
		}
		if v6 {
			return "::1", port
		}
		return "127.0.0.1", port
	}
	return host, port
}
