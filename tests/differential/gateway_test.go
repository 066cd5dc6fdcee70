package differential_test

import (
	"testing"

	"github.com/meshplane/istiod/tests/differential"
)

// ingressObjects is an ingress gateway deployment of namespace ns, as
// Istio's chart makes it (pod labelled istio=ingressgateway, Service
// ports 80 and 443 to 8080 and 8443), and a backend Service web on 9080
// with one pod. The router is Proxy ingressProxy(ns).
func ingressObjects(ns string) string {
	return `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `}
---
apiVersion: v1
kind: Service
metadata: {name: istio-ingressgateway, namespace: ` + ns + `, labels: {istio: ingressgateway}}
spec:
  type: ClusterIP
  selector: {istio: ingressgateway}
  ports:
  - {name: http2, port: 80, targetPort: 8080}
  - {name: https, port: 443, targetPort: 8443}
  - {name: tls, port: 15443, targetPort: 15443}
---
apiVersion: v1
kind: Pod
metadata:
  name: istio-ingressgateway-7d9c5-x2x4q
  namespace: ` + ns + `
  labels: {istio: ingressgateway, app: istio-ingressgateway}
spec:
  serviceAccountName: istio-ingressgateway
  containers:
  - name: istio-proxy
    image: proxyv2
    ports: [{containerPort: 8080}, {containerPort: 8443}, {containerPort: 15443}]
status: {podIP: 10.244.2.10}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ` + ns + `}
spec:
  selector: {app: web}
  ports: [{name: http, port: 9080}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-6f7c9-abcde, namespace: ` + ns + `, labels: {app: web, version: v1}}
spec:
  serviceAccountName: web
  containers: [{name: web, image: web, ports: [{containerPort: 9080}]}]
status: {podIP: 10.244.2.20}
`
}

func ingressProxy(ns string) differential.Proxy {
	return differential.Proxy{Type: "router", Pod: "istio-ingressgateway-7d9c5-x2x4q", Namespace: ns}
}

// A VirtualService with a CORS policy bound to an Istio Gateway: the
// router's route carries the CORS filter's per-route config, which Istio
// enables explicitly (filterEnabled 100%) and for which it forwards
// unmatched preflights.
func TestGatewayCORS(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "gateway cors",
		Objects: ingressObjects("gw-cors") + `
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: web-gw, namespace: gw-cors}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: ["web.example.com"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: gw-cors}
spec:
  hosts: ["web.example.com"]
  gateways: [web-gw]
  http:
  - corsPolicy:
      allowOrigins: [{exact: "https://app.example.com"}, {regex: "https://.*\\.example\\.org"}]
      allowMethods: [GET, POST]
      allowHeaders: [x-custom]
      exposeHeaders: [x-exposed]
      maxAge: 24h
      allowCredentials: true
    route:
    - destination: {host: web, port: {number: 9080}}
`,
		Proxy: ingressProxy("gw-cors"),
	})
}

// An HTTPS server on 15443 terminating ISTIO_MUTUAL (the east-west
// pattern of a mesh gateway) beside an HTTP server that redirects to
// HTTPS: every route gets a trace decorator, redirects and direct
// responses too (Istio's TranslateRoute sets it on each route; ours set it
// only on routes to a destination), a named match names its route
// "<route>.<match>", and the hosts of one VirtualService collapse into one
// virtual host named after the most specific host (host.Names order).
func TestGatewayIstioMutualDecorator(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "gateway istio mutual decorator",
		Objects: ingressObjects("gw-mtls") + `
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: mtls-gw, namespace: gw-mtls}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 15443, name: https-mtls, protocol: HTTPS}
    hosts: ["*"]
    tls: {mode: ISTIO_MUTUAL}
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: ["web.mesh.example.com", "old.mesh.example.com"]
    tls: {httpsRedirect: true}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web-mtls, namespace: gw-mtls}
spec:
  hosts: ["web.mesh.example.com", "old.mesh.example.com", "web.gw-mtls.svc.cluster.local"]
  gateways: [mtls-gw]
  http:
  - name: moved
    match: [{uri: {exact: /old}, name: exact}]
    redirect: {uri: /new, derivePort: FROM_REQUEST_PORT}
  - match: [{uri: {prefix: /healthz}}]
    directResponse: {status: 200, body: {string: ok}}
  - match: [{uri: {prefix: /api}}]
    route:
    - destination: {host: web, port: {number: 9080}}
  - route:
    - destination: {host: web, port: {number: 9080}}
      weight: 90
    - destination: {host: web.gw-mtls.svc.cluster.local, port: {number: 9080}}
      weight: 10
`,
		Proxy: ingressProxy("gw-mtls"),
	})
}

// A Gateway API Gateway with two listeners and HTTPRoutes: the router of
// the Gateway's generated Deployment gets routes translated from the
// synthetic VirtualServices, whose names the trace decorators carry
// ("<ns>~<gateway>~istio-autogenerated-k8s-gateway~<listener>~<host>:<port>/*"
// for a split), a redirect route as well (ours had none), with the
// listener's port kept in the redirect unless it is the scheme's default.
func TestGatewayAPIHTTPRoute(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "gateway api httproute",
		Objects: `
apiVersion: v1
kind: Namespace
metadata: {name: gwapi}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: gwapi}
spec:
  gatewayClassName: istio
  listeners:
  - {name: http, port: 80, protocol: HTTP, hostname: "shop.example.com"}
  - {name: alt, port: 8080, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: gwapi}
spec:
  parentRefs: [{name: edge, sectionName: http}]
  hostnames: ["shop.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /cart}}]
    backendRefs: [{name: cart, port: 9080}]
  - backendRefs: [{name: web, port: 9080, weight: 80}, {name: cart, port: 9080, weight: 20}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: any-host, namespace: gwapi}
spec:
  parentRefs: [{name: edge, sectionName: alt}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: /new}, statusCode: 302}}]
  - matches: [{path: {type: Exact, value: /x}}]
    backendRefs: [{name: web, port: 9080}]
  - backendRefs: [{name: web, port: 9080}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-a, value: b}]}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: gwapi}
spec:
  selector: {app: web}
  ports: [{name: http, port: 9080}]
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: gwapi}
spec:
  selector: {app: cart}
  ports: [{name: http, port: 9080}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-6f7c9-abcde, namespace: gwapi, labels: {app: web}}
spec:
  containers: [{name: web, image: web, ports: [{containerPort: 9080}]}]
status: {podIP: 10.244.3.20}
---
apiVersion: v1
kind: Pod
metadata: {name: cart-6f7c9-abcde, namespace: gwapi, labels: {app: cart}}
spec:
  containers: [{name: cart, image: cart, ports: [{containerPort: 9080}]}]
status: {podIP: 10.244.3.21}
---
apiVersion: v1
kind: Pod
metadata:
  name: edge-istio-5b8d7-q9w8e
  namespace: gwapi
  labels: {gateway.networking.k8s.io/gateway-name: edge, service.istio.io/canonical-name: edge-istio}
spec:
  serviceAccountName: edge-istio
  containers: [{name: istio-proxy, image: proxyv2, ports: [{containerPort: 80}, {containerPort: 8080}]}]
status: {podIP: 10.244.3.10}
`,
		Proxy: differential.Proxy{Type: "router", Pod: "edge-istio-5b8d7-q9w8e", Namespace: "gwapi"},
	})
}
