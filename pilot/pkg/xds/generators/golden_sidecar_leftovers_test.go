package generators_test

import "github.com/meshplane/istiod/pilot/pkg/networking/listener"

// Sidecar parity leftovers: inbound protocol stacks, the server names of
// TLS ports' own chains, and the addresses of dual-stack and IPv6-only
// proxies' listeners. See the case files.
var sidecarLeftoverCases = []goldenCase{
	// Mongo, Redis and MySQL filters on inbound chains, Redis and MySQL on.
	{name: "sidecar-inbound-protocols", nodeID: "sidecar~10.1.0.43~db-abc.app~app.svc.cluster.local", ns: "app",
		protocols: listener.ProtocolFilters{Redis: true, MySQL: true}},
	// Server names of TLS ports without a VIP and of DYNAMIC_DNS wildcards.
	{name: "sidecar-tls-sni", nodeID: "sidecar~10.1.0.44~client-abc.app~app.svc.cluster.local", ns: "app"},
	// A dual-stack NONE-mode proxy without a global unicast address.
	{name: "sidecar-dual-stack-none", nodeID: "sidecar~169.254.0.9~app-abc.app~app.svc.cluster.local", ns: "app",
		labels: map[string]any{"app": "app"}, meta: map[string]any{"INTERCEPTION_MODE": "NONE", "INSTANCE_IPS": "169.254.0.9,fe80::9"},
		dualStack: true, routes: []string{"80", "8080"}},
	// A dual-stack proxy's listeners on ServiceEntry addresses and binds.
	{name: "sidecar-dual-stack-vips", nodeID: "sidecar~10.1.0.9~client-abc.app~app.svc.cluster.local", ns: "app",
		meta: map[string]any{"INSTANCE_IPS": "10.1.0.9,fd00::9"}, dualStack: true},
	// An IPv6-only proxy's egress listeners bound to 0.0.0.0 and ::.
	{name: "sidecar-ipv6-bind", nodeID: "sidecar~fd00::9~client-abc.app~app.svc.cluster.local", ns: "app", routes: []string{"8080"}},
}

func init() { goldenCases = append(goldenCases, sidecarLeftoverCases...) }
