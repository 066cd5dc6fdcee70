package generators

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// What a proxy's metadata says about where it may listen, read the way
// Istio's agent sends it.

// noRedirect tells a proxy whose traffic is not redirected to it
// (INTERCEPTION_MODE NONE): its listeners bind to their ports.
func noRedirect(proxy *model.Proxy) bool {
	return proxy.Metadata != nil && proxy.Metadata.InterceptionMode == "NONE"
}

// bindsToPort is whether a Sidecar listener with this capture mode binds
// to its port: DEFAULT follows the proxy, NONE always does, IPTABLES
// never.
func bindsToPort(mode networking.CaptureMode, proxy *model.Proxy) bool {
	if mode == networking.CaptureMode_DEFAULT {
		return noRedirect(proxy)
	}
	return mode == networking.CaptureMode_NONE
}

// metadataInt reads a number the agent sends as a JSON number or string.
func metadataInt(proxy *model.Proxy, key string) int {
	if proxy.Metadata == nil {
		return 0
	}
	switch v := proxy.Metadata.Raw[key].(type) {
	case float64:
		return int(v)
	case string:
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

// bindChecker tells whether the proxy may have a listener on bind:port,
// as Istio decides: not a port below 1024 it binds to when unprivileged,
// and not the port of one of its static listeners (status, Prometheus,
// secure metrics) when the listener is on the wildcard (or names no bind
// and is HTTP, which lands on the wildcard); with virtualPorts, not the
// capture ports either (outbound only: Istio checks them there).
func bindChecker(proxy *model.Proxy, virtualPorts []int) func(bool, string, int, protocol.Instance) bool {
	unpriv := unprivileged(proxy)
	var static []int
	for _, k := range []string{"ENVOY_STATUS_PORT", "ENVOY_PROMETHEUS_PORT", "ENVOY_SECURE_METRICS_PORT", "ENVOY_SECURE_MERGED_METRICS_PORT"} {
		if p := metadataInt(proxy, k); p != 0 {
			static = append(static, p)
		}
	}
	wild := wildcards(proxy)[0]
	return func(bindToPort bool, bind string, port int, p protocol.Instance) bool {
		if bindToPort && unpriv && port > 0 && port < 1024 {
			return false
		}
		if bind != "" && bind != wild {
			return true
		}
		if bind == "" && !p.IsHTTP() {
			return true
		}
		for _, s := range append(static, virtualPorts...) {
			if s == port {
				return false
			}
		}
		return true
	}
}

// wildcards are the proxy's wildcard addresses by its IP mode, as Istio's
// getWildcardsAndLocalHost: 0.0.0.0, :: when all its addresses are IPv6,
// and both, 0.0.0.0 first, for a dual-stack proxy (whatever
// ISTIO_DUAL_STACK says; the flag decides only whether the second one is
// listened on).
func wildcards(proxy *model.Proxy) []string {
	switch proxy.IPMode() {
	case model.IPv6:
		return []string{"::"}
	case model.Dual:
		return []string{"0.0.0.0", "::"}
	}
	return []string{"0.0.0.0"}
}

// localhosts are the proxy's loopback addresses by its IP mode, as Istio's
// getWildcardsAndLocalHost: 127.0.0.1, ::1 for an IPv6-only proxy, both,
// 127.0.0.1 first, for a dual-stack one (a listener bound there listens
// on both, whatever ISTIO_DUAL_STACK says).
func localhosts(proxy *model.Proxy) []string {
	switch proxy.IPMode() {
	case model.IPv6:
		return []string{"::1"}
	case model.Dual:
		return []string{listener.Localhost, "::1"}
	}
	return []string{listener.Localhost}
}

// sidecarInboundBinds are where a Sidecar ingress listener without a bind
// is named and bound, as Istio's getSidecarInboundBindIPs: the proxy's
// first global unicast address, else its wildcards (the first is the
// name; a dual-stack proxy's listener that binds to its port also listens
// on the second under ISTIO_DUAL_STACK).
func sidecarInboundBinds(proxy *model.Proxy) []string {
	for _, ip := range proxy.IPAddresses {
		if a, err := netip.ParseAddr(ip); err == nil && a.IsGlobalUnicast() {
			return []string{a.String()}
		}
	}
	return wildcards(proxy)
}

// egressListeners resolves the Sidecar's egress listeners for the proxy
// when any of them needs more than the listeners every sidecar gets (a
// port, a bind, a capture mode), or the proxy does not redirect; nil
// otherwise.
func egressListeners(sc *model.SidecarScope, proxy *model.Proxy) []listener.EgressListener {
	special := noRedirect(proxy)
	for _, e := range sc.EgressListeners {
		l := e.Listener
		if l.GetPort() != nil || l.GetBind() != "" || l.GetCaptureMode() != networking.CaptureMode_DEFAULT {
			special = true
		}
	}
	if !special {
		return nil
	}
	out := make([]listener.EgressListener, 0, len(sc.EgressListeners))
	for _, e := range sc.EgressListeners {
		l := e.Listener
		el := listener.EgressListener{Bind: l.GetBind(), Services: oldestFirst(e.Services()), VirtualServices: e.VirtualServices(),
			Port: int(l.GetPort().GetNumber()), HasPort: l.GetPort() != nil, Protocol: protocol.Parse(l.GetPort().GetProtocol()),
			PortName: l.GetPort().GetName()}
		switch {
		case noRedirect(proxy):
			el.BindToPort = true
		case l.GetCaptureMode() == networking.CaptureMode_NONE, strings.HasPrefix(l.GetBind(), listener.UnixPrefix):
			// a Unix socket cannot be an original destination
			el.BindToPort = true
		}
		if el.Bind == "" && el.BindToPort {
			lh := localhosts(proxy)
			el.Bind, el.ExtraBinds = lh[0], lh[1:]
		}
		out = append(out, el)
	}
	return out
}

// egressKey is what outbound listeners depend on of the proxy beyond its
// sidecar scope: its interception mode (whether it redirects, and whether
// virtualOutbound is transparent), its IP mode (wildcards, localhost and
// the additional addresses of a dual-stack proxy), and where it may bind.
func egressKey(proxy *model.Proxy) string {
	var b strings.Builder
	b.WriteString(string(proxy.Interception()) + "," + proxy.IPMode().String() + "," + strconv.FormatBool(unprivileged(proxy)))
	for _, k := range []string{"ENVOY_STATUS_PORT", "ENVOY_PROMETHEUS_PORT", "ENVOY_SECURE_METRICS_PORT", "ENVOY_SECURE_MERGED_METRICS_PORT"} {
		b.WriteString("," + strconv.Itoa(metadataInt(proxy, k)))
	}
	return b.String()
}

// oldestFirst orders a listener's services as Istio walks them when two
// share a listener and the first keeps it: oldest first, then by hostname
// (a copy; the scope's list is shared).
func oldestFirst(services []*model.Service) []*model.Service {
	out := slices.Clone(services)
	slices.SortStableFunc(out, func(a, b *model.Service) int { return a.CreationTime.Compare(b.CreationTime) })
	return out
}
