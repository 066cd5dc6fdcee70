package generators

import (
	"net"
	"sort"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// inboundTargets are the proxy's inbound ports: its Sidecar's ingress
// listeners when it has any (they replace the ports of the services that
// select the workload, as in Istio), else those services' ports.
func (g *SidecarGenerators) inboundTargets(push *model.PushContext, proxy *model.Proxy) []listener.InboundTarget {
	sc := push.SidecarScope(proxy)
	ingress := sc.IngressListeners()
	if len(ingress) == 0 {
		if noRedirect(proxy) {
			// nothing is redirected to the proxy, and binding the services'
			// ports would take them from the application: Istio builds no
			// inbound listeners or clusters until a Sidecar says which
			return nil
		}
		// a service port on one of the proxy's own listener ports gets no
		// chains (its cluster stays), as Istio checks service ports
		targets := g.proxyTargets(proxy)
		canBind := bindChecker(proxy, []int{int(push.Mesh.GetProxyListenPort()), int(push.Mesh.GetProxyInboundListenPort())})
		for i := range targets {
			targets[i].NoListener = !canBind(false, wildcards(proxy)[0], targets[i].Port, targets[i].Protocol)
		}
		return targets
	}
	byServices := g.proxyTargets(proxy)
	canBind := bindChecker(proxy, nil)
	config := "/apis/networking.istio.io/v1/namespaces/" + sc.Namespace + "/sidecar/" + sc.Name
	var out []listener.InboundTarget
	seen := map[int]bool{}
	for _, l := range ingress {
		port := int(l.GetPort().GetNumber())
		if seen[port] {
			continue // validation forbids it; the first listener keeps the port
		}
		seen[port] = true
		t := listener.InboundTarget{Port: port, Protocol: protocol.Parse(l.GetPort().GetProtocol()), ServicePort: port,
			Bind: l.GetBind(), BindToPort: bindsToPort(l.GetCaptureMode(), proxy), Config: config,
			TraceHost: sc.Name + "." + sc.Namespace}
		// a port the proxy cannot listen on keeps its cluster (as in
		// Istio) but gets no chains
		t.NoListener = !canBind(t.BindToPort, t.Bind, port, t.Protocol)
		if t.Bind == "" {
			binds := sidecarInboundBinds(proxy)
			t.Bind, t.ExtraBinds = binds[0], binds[1:]
		}
		// the services behind the port, for its cluster; a Sidecar-named
		// placeholder when none targets it (MeshExternal, as Istio's
		// findOrCreateService makes it: its cluster has no telemetry
		// metadata)
		for _, st := range byServices {
			if st.Port == port {
				t.Services, t.ServicePort = st.Services, st.ServicePort
			}
		}
		if len(t.Services) == 0 {
			t.Services = []*model.Service{{Hostname: sc.Name + "." + sc.Namespace, MeshExternal: true,
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

// listenerTargets are the inbound targets that get chains: those the
// proxy can listen on, with a Sidecar ingress listener's own TLS when
// ENABLE_TLS_ON_SIDECAR_INGRESS is on (Istio ignores it otherwise). Its
// protocol is then the one after TLS termination, whatever the port's
// PeerAuthentication mode.
func (g *SidecarGenerators) listenerTargets(push *model.PushContext, proxy *model.Proxy, targets []listener.InboundTarget) []listener.InboundTarget {
	var tlsByPort map[int]*networking.ServerTLSSettings
	if g.SidecarIngressTLS {
		for _, l := range push.SidecarScope(proxy).IngressListeners() {
			if l.GetTls() != nil {
				if tlsByPort == nil {
					tlsByPort = map[int]*networking.ServerTLSSettings{}
				}
				if _, dup := tlsByPort[int(l.GetPort().GetNumber())]; !dup {
					tlsByPort[int(l.GetPort().GetNumber())] = l.GetTls()
				}
			}
		}
	}
	out := make([]listener.InboundTarget, 0, len(targets))
	for _, t := range targets {
		if t.NoListener {
			genLog.Warnf("%s: no inbound listener on port %d: it is privileged or a static listener's", proxy.ID, t.Port)
			continue
		}
		if tls := tlsByPort[t.Port]; tls != nil && t.Config != "" {
			in := listener.GatewayTLS{Defaults: push.Mesh.GetTlsDefaults(), Certs: authn.ServerCertsFromMetadata(proxy.Metadata)}
			if ctx := listener.SidecarIngressTLS(tls, in); ctx != nil {
				t.TLS = ctx
				t.Protocol = listener.AfterTLSTermination(t.Protocol)
			}
		}
		out = append(out, t)
	}
	return out
}
