package differential_test

import (
	"testing"

	"github.com/meshplane/istiod/tests/differential"
)

// A ServiceEntry declaring HTTP port 80 and, on the sidecar of reviews
// (port 9080), the outbound route configuration "80": Istio considers
// every VirtualService on port 80 (BuildSidecarOutboundVirtualHosts skips
// its selectVirtualServices there), so the VirtualService of the proxy's
// own service gets a virtual host "reviews.<ns>.svc.cluster.local:80"
// answering to that name alone, with routes whose destinations without a
// port take the route's port (the lookup sees services of port 80 only):
// virtualHosts[1] is the proxy's own service where ours had the catch-all.
// On 9080 the VirtualService's other host, no service's, gets a virtual
// host of its own too.
func TestSidecarServiceEntryPort80(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "sidecar serviceentry port 80",
		Objects: bookinfoObjects("se80", "4") + `
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin-ext, namespace: se80}
spec:
  hosts: [httpbin.example.com]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{number: 80, name: http, protocol: HTTP}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: se80}
spec:
  hosts: [reviews, reviews.example.com]
  http:
  - route: [{destination: {host: reviews, subset: v1}}]
`,
		Proxy: differential.Proxy{Pod: "reviews-v1-5f6d7-abcde", Namespace: "se80"},
	})
}

// VirtualServices whose routes do not all apply: one whose only match
// names another port leaves its service the default route (Istio's
// BuildSidecarVirtualHostWrapper builds the service as one without a
// VirtualService), and a catch-all match ends the routes of its
// VirtualService (BuildHTTPRoutesForVirtualService stops there), with a
// destination elsewhere taking the route's port.
func TestSidecarVirtualServiceEdges(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "sidecar virtualservice edges",
		Objects: bookinfoObjects("vsedge", "12") + `
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: details, namespace: vsedge}
spec:
  hosts: [details]
  http:
  - match: [{port: 8080}]
    route: [{destination: {host: details}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ratings, namespace: vsedge}
spec:
  hosts: [ratings]
  http:
  - match: [{uri: {prefix: /}, name: all}]
    name: first
    route: [{destination: {host: productpage}}]
  - route: [{destination: {host: ratings}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: productpage, namespace: vsedge}
spec:
  hosts: [productpage]
  http:
  - match: [{sourceNamespace: vsedge, sourceLabels: {app: reviews}}]
    route: [{destination: {host: productpage}}]
    timeout: 3s
  - match: [{sourceNamespace: elsewhere}]
    route: [{destination: {host: details}}]
  - route: [{destination: {host: productpage}}]
`,
		Proxy: differential.Proxy{Pod: "reviews-v2-5f6d7-abcde", Namespace: "vsedge"},
	})
}

// A headless Service on port 80 beside a ServiceEntry on 80, seen from a
// pod of that Service: its virtual host answers to every name below its
// names too ("*.<name>", generateVirtualHostDomains), and its inbound
// route's virtual host is named after the service port, not the target
// port (buildSidecarInboundHTTPRouteConfig).
func TestSidecarHeadlessService(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "sidecar headless service",
		Objects: `
apiVersion: v1
kind: Namespace
metadata: {name: headless}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin-ext, namespace: headless}
spec:
  hosts: [httpbin.example.com]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{number: 80, name: http, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: headless}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: headless, labels: {app: db}}
spec:
  containers: [{name: db, image: db, ports: [{containerPort: 8080}]}]
status: {podIP: 10.244.9.11}
`,
		Proxy: differential.Proxy{Pod: "db-0", Namespace: "headless", Workload: "db"},
	})
}

// bookinfoObjects is the bookinfo application in namespace ns: four
// services, reviews in three versions, pods at 10.244.<subnet>.x.
func bookinfoObjects(ns, subnet string) string {
	svc := func(name string, port string) string {
		return `
---
apiVersion: v1
kind: Service
metadata: {name: ` + name + `, namespace: ` + ns + `, labels: {app: ` + name + `, service: ` + name + `}}
spec:
  selector: {app: ` + name + `}
  ports: [{name: http, port: ` + port + `}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bookinfo-` + name + `, namespace: ` + ns + `}`
	}
	pod := func(app, version, ip string) string {
		return `
---
apiVersion: v1
kind: Pod
metadata: {name: ` + app + `-` + version + `-5f6d7-abcde, namespace: ` + ns + `, labels: {app: ` + app + `, version: ` + version + `}}
spec:
  serviceAccountName: bookinfo-` + app + `
  containers: [{name: ` + app + `, image: ` + app + `, ports: [{containerPort: 9080}]}]
status: {podIP: ` + ip + `}`
	}
	return `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `, labels: {istio-injection: enabled}}` +
		svc("productpage", "9080") + svc("details", "9080") + svc("reviews", "9080") + svc("ratings", "9080") +
		pod("productpage", "v1", "10.244."+subnet+".10") + pod("details", "v1", "10.244."+subnet+".11") +
		pod("reviews", "v1", "10.244."+subnet+".21") + pod("reviews", "v2", "10.244."+subnet+".22") + pod("reviews", "v3", "10.244."+subnet+".23") +
		pod("ratings", "v1", "10.244."+subnet+".31")
}

// Bookinfo as users first meet it: a DestinationRule with subsets and a
// VirtualService with a header match, a weighted split, retries and a
// timeout, seen from productpage's sidecar.
func TestSidecarBookinfoSubsetsRetries(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "sidecar bookinfo subsets retries",
		Objects: bookinfoObjects("bookinfo", "5") + `
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: bookinfo}
spec:
  host: reviews
  trafficPolicy:
    loadBalancer: {simple: LEAST_REQUEST}
    connectionPool: {http: {http1MaxPendingRequests: 100, maxRequestsPerConnection: 10}}
    outlierDetection: {consecutive5xxErrors: 5, interval: 30s, baseEjectionTime: 1m}
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
  - {name: v3, labels: {version: v3}, trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: bookinfo}
spec:
  hosts: [reviews]
  http:
  - name: jason
    match: [{headers: {end-user: {exact: jason}}}]
    route: [{destination: {host: reviews, subset: v2}}]
  - name: split
    route:
    - {destination: {host: reviews, subset: v1}, weight: 80}
    - {destination: {host: reviews, subset: v3}, weight: 20}
    retries: {attempts: 3, perTryTimeout: 2s, retryOn: "5xx,connect-failure"}
    timeout: 10s
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ratings, namespace: bookinfo}
spec:
  hosts: [ratings.bookinfo.svc.cluster.local]
  http:
  - fault: {abort: {percentage: {value: 50}, httpStatus: 503}}
    route: [{destination: {host: ratings}}]
`,
		Proxy: differential.Proxy{Pod: "productpage-v1-5f6d7-abcde", Namespace: "bookinfo"},
	})
}

// A Sidecar that restricts egress to the proxy's own namespace and
// istio-system, with another namespace's service left out.
func TestSidecarEgressRestriction(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "sidecar egress restriction",
		Objects: bookinfoObjects("shop", "7") + `
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Service
metadata: {name: hidden, namespace: other}
spec:
  selector: {app: hidden}
  ports: [{name: http, port: 9080}, {name: grpc, port: 9090}]
---
apiVersion: v1
kind: Pod
metadata: {name: hidden-5f6d7-abcde, namespace: other, labels: {app: hidden}}
spec:
  containers: [{name: hidden, image: hidden, ports: [{containerPort: 9080}, {containerPort: 9090}]}]
status: {podIP: 10.244.6.10}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: shop}
spec:
  egress:
  - hosts: ["./*", "istio-system/*"]
  outboundTrafficPolicy: {mode: REGISTRY_ONLY}
`,
		Proxy: differential.Proxy{Pod: "reviews-v2-5f6d7-abcde", Namespace: "shop"},
	})
}
