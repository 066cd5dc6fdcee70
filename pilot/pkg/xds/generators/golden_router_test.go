package generators_test

// Gateways gaining what sidecars have: the shared TCP chain builder on
// their TCP and TLS routes, the proxy's IDLE_TIMEOUT, and IP modes. See
// the case files.
var routerParityCases = []goldenCase{
	// TCP, Mongo, TLS passthrough and AUTO_PASSTHROUGH servers with
	// DestinationRule tunnels, the proxy's IDLE_TIMEOUT.
	{name: "gateway-tcp-routes", nodeID: "router~10.244.9.1~ingress-abc.istio-system~istio-system.svc.cluster.local", ns: "istio-system",
		labels: map[string]any{"istio": "ingressgateway"}, routes: []string{"http.80"}, meta: map[string]any{"IDLE_TIMEOUT": "45s"}},
	// An IPv6-only gateway.
	{name: "gateway-ipv6", nodeID: "router~fd00::9~ingress-abc.istio-system~istio-system.svc.cluster.local", ns: "istio-system",
		labels: map[string]any{"istio": "ingressgateway"}, routes: []string{"http.80"}},
	// A dual-stack gateway under ISTIO_DUAL_STACK.
	{name: "gateway-dual-stack", nodeID: "router~10.244.9.1~ingress-abc.istio-system~istio-system.svc.cluster.local", ns: "istio-system",
		labels: map[string]any{"istio": "ingressgateway"}, routes: []string{"http.80"},
		meta: map[string]any{"INSTANCE_IPS": "10.244.9.1,fd00::9"}, dualStack: true},
}

func init() { goldenCases = append(goldenCases, routerParityCases...) }
