package differential_test

import (
	"testing"

	"github.com/meshplane/istiod/tests/differential"
)

// A service waypoint that two services use, on inputs unlike the shared
// reference's: an HTTP service with a VirtualService (a header match,
// retries, a weighted split over DestinationRule subsets) and an L7
// AuthorizationPolicy bound to it, and a TCP service. Both control planes
// run in ambient mode and program the waypoint themselves (its status
// addresses, read back by their ambient indexes); the waypoint proxy's
// clusters, listeners and load assignments are compared.
func TestWaypointTwoServices(t *testing.T) {
	const ns = "wpdiff"
	pod := func(name, app, version, ip, sa string) string {
		return `
---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: ` + ns + `, labels: {app: ` + app + `, version: ` + version + `}, annotations: {ambient.istio.io/redirection: enabled}}
spec: {serviceAccountName: ` + sa + `, containers: [{name: app, image: app}]}
status: {podIP: ` + ip + `}`
	}
	differential.Shared(t).Run(t, differential.Case{
		Name: "waypoint two services",
		Env:  []string{"PILOT_ENABLE_AMBIENT=true"},
		// the waypoint's configuration holds only what uses it: the
		// sentinel is read from a probe sidecar
		Probe: true,
		Objects: `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `, labels: {istio.io/dataplane-mode: ambient}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: cart, namespace: ` + ns + `}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: shop-waypoint, namespace: ` + ns + `}` +
			pod("cart-v1-6b7c8-aaaaa", "cart", "v1", "10.244.90.1", "cart") +
			pod("cart-v2-6b7c8-bbbbb", "cart", "v2", "10.244.90.2", "cart") +
			pod("stock-7d8e9-ccccc", "stock", "v1", "10.244.90.3", "default") + `
---
apiVersion: v1
kind: Pod
metadata: {name: shop-waypoint-5f6a7-ddddd, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: shop-waypoint, istio.io/dataplane-mode: none, sidecar.istio.io/inject: "false"}}
spec: {serviceAccountName: shop-waypoint, containers: [{name: istio-proxy, image: proxyv2}]}
status: {podIP: 10.244.90.9}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: ` + ns + `, labels: {istio.io/use-waypoint: shop-waypoint}}
spec: {selector: {app: cart}, ports: [{name: http, port: 8080, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: stock, namespace: ` + ns + `, labels: {istio.io/use-waypoint: shop-waypoint}}
spec: {selector: {app: stock}, ports: [{name: tcp-stock, port: 9000, targetPort: 9000}]}
---
apiVersion: v1
kind: Service
metadata: {name: shop-waypoint, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: shop-waypoint}}
spec: {selector: {gateway.networking.k8s.io/gateway-name: shop-waypoint}, ports: [{name: mesh, port: 15008, appProtocol: all}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: shop-waypoint, namespace: ` + ns + `, labels: {istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: cart, namespace: ` + ns + `}
spec:
  host: cart.` + ns + `.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: cart, namespace: ` + ns + `}
spec:
  hosts: [cart.` + ns + `.svc.cluster.local]
  http:
  - match: [{headers: {x-canary: {exact: "yes"}}}]
    route: [{destination: {host: cart.` + ns + `.svc.cluster.local, subset: v2}}]
  - retries: {attempts: 2, perTryTimeout: 1s}
    route:
    - {destination: {host: cart.` + ns + `.svc.cluster.local, subset: v1}, weight: 80}
    - {destination: {host: cart.` + ns + `.svc.cluster.local, subset: v2}, weight: 20}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: cart-reads, namespace: ` + ns + `}
spec:
  targetRefs: [{kind: Service, group: "", name: cart}]
  rules:
  - to: [{operation: {methods: [GET], paths: ["/items/*"]}}]
`,
		Proxy: differential.Proxy{Type: "waypoint", Pod: "shop-waypoint-5f6a7-ddddd", Namespace: ns,
			Labels: map[string]string{"gateway.networking.k8s.io/gateway-name": "shop-waypoint"}},
		Allowed: []differential.Allowed{{
			Name: "waypoint-peer-trace-tags", Type: "lds", Resource: "main_internal", Path: "filterChains[*].filters[*].typedConfig.tracing.customTags",
			Why: "Istio adds 18 istio.source_*/istio.destination_* tags whose value is CustomTag.value, a field the " +
				"go-control-plane of this module lacks (a tag without one fails Envoy's validation); the same allowance as " +
				"TestWaypointConfigMatchesIstio, gone with a go-control-plane that has the field",
		}},
	})
}
