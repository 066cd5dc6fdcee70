package differential_test

import (
	"testing"

	"github.com/meshplane/istiod/tests/differential"
)

// A waypoint of the primary (network1) whose service also has endpoints
// in the remote cluster (network2, behind the remote's east-west gateway
// Service): the remote's endpoints that take mTLS go through the gateway
// (of their cluster), the one that does not is dropped, the primary's
// ambient pod keeps HBONE. Both control planes run in ambient mode with
// Istio's defaults (the ambient index reads the primary only); the
// waypoint's clusters, listeners and load assignments are compared.
func TestMulticlusterWaypointThroughGateway(t *testing.T) {
	const ns = "mc-wp"
	pod := func(name, ip, labels, annotations string) string {
		return `
---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: ` + ns + `, labels: {app: cart` + labels + `}` + annotations + `}
spec: {containers: [{name: app, image: app}]}
status: {podIP: ` + ip + `}`
	}
	remote := `apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `}` +
		pod("cart-6b7c8-remote1", "10.82.1.1", ", security.istio.io/tlsMode: istio", "") +
		pod("cart-6b7c8-remote2", "10.82.1.2", ", security.istio.io/tlsMode: istio", "") +
		pod("cart-6b7c8-remote3", "10.82.1.3", "", `, annotations: {ambient.istio.io/redirection: enabled}`) + `
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: ` + ns + `}
spec: {clusterIP: 10.0.0.6, selector: {app: cart}, ports: [{name: http, port: 8080, targetPort: 8080}]}
` + mcGateway("istio-eastwestgateway", "network2", "10.0.0.10", "203.0.113.7")
	primary := `apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `, labels: {istio.io/dataplane-mode: ambient}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: cart-waypoint, namespace: ` + ns + `}` +
		pod("cart-6b7c8-local1", "10.81.1.1", "", `, annotations: {ambient.istio.io/redirection: enabled}`) + `
---
apiVersion: v1
kind: Pod
metadata: {name: cart-waypoint-5f6a7-aaaaa, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: cart-waypoint, istio.io/dataplane-mode: none, sidecar.istio.io/inject: "false"}}
spec: {serviceAccountName: cart-waypoint, containers: [{name: istio-proxy, image: proxyv2}]}
status: {podIP: 10.81.1.9}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: ` + ns + `, labels: {istio.io/use-waypoint: cart-waypoint}}
spec: {selector: {app: cart}, ports: [{name: http, port: 8080, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: cart-waypoint, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: cart-waypoint}}
spec: {selector: {gateway.networking.k8s.io/gateway-name: cart-waypoint}, ports: [{name: mesh, port: 15008, appProtocol: all}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: cart-waypoint, namespace: ` + ns + `, labels: {istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
`
	m := differential.Multicluster{Env: []string{"PILOT_ENABLE_AMBIENT=true"}, Remote: remote,
		PrimaryNetwork: "network1", RemoteNetwork: "network2"}
	differential.Shared(t).Multicluster(t, m, func(c *differential.Clusters) {
		c.Run(t, differential.Case{
			Name:    "multicluster waypoint through gateway",
			Objects: primary,
			Probe:   true,
			Proxy: differential.Proxy{Type: "waypoint", Pod: "cart-waypoint-5f6a7-aaaaa", Namespace: ns,
				Labels:   map[string]string{"gateway.networking.k8s.io/gateway-name": "cart-waypoint"},
				Metadata: map[string]any{"NETWORK": "network1"}},
			Allowed: []differential.Allowed{{
				Name: "waypoint-peer-trace-tags", Type: "lds", Resource: "main_internal", Path: "filterChains[*].filters[*].typedConfig.tracing.customTags",
				Why: "as in TestWaypointTwoServices: CustomTag.value is missing from this module's go-control-plane",
			}},
		})
	})
}
