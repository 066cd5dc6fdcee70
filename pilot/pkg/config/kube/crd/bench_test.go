package crd_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
)

var benchTemplates = []string{
	`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: vs-%[1]d, namespace: ns-%[2]d}
spec:
  hosts: [svc-%[1]d]
  http:
  - match: [{headers: {end-user: {exact: jason}}, uri: {prefix: /api}}]
    route: [{destination: {host: svc-%[1]d, subset: v2}}]
    fault: {delay: {percentage: {value: 10}, fixedDelay: 2s}}
  - route:
    - {destination: {host: svc-%[1]d, subset: v1}, weight: 75}
    - {destination: {host: svc-%[1]d, subset: v3}, weight: 25}
    retries: {attempts: 2, perTryTimeout: 1s, retryOn: 5xx}
    timeout: 4s
`,
	`apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: dr-%[1]d, namespace: ns-%[2]d}
spec:
  host: svc-%[1]d
  trafficPolicy:
    loadBalancer: {simple: LEAST_REQUEST}
    connectionPool: {tcp: {maxConnections: 100}, http: {http2MaxRequests: 1000}}
    outlierDetection: {consecutive5xxErrors: 7, interval: 5m, baseEjectionTime: 15m}
    tls: {mode: ISTIO_MUTUAL}
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
`,
	`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-%[1]d, namespace: ns-%[2]d}
spec:
  hosts: [ext-%[1]d.example.com]
  ports: [{number: 443, name: https, protocol: TLS}]
  resolution: DNS
  location: MESH_EXTERNAL
`,
	`apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw-%[1]d, namespace: ns-%[2]d}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["ns-%[2]d/app-%[1]d.example.com"]
    tls: {mode: SIMPLE, credentialName: cert-%[1]d}
`,
	`apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ap-%[1]d, namespace: ns-%[2]d}
spec:
  selector: {matchLabels: {app: svc-%[1]d}}
  action: ALLOW
  rules:
  - from: [{source: {principals: ["cluster.local/ns/ns-%[2]d/sa/client"]}}]
    to: [{operation: {methods: [GET], paths: ["/api/*"]}}]
    when: [{key: "request.headers[x-id]", values: ["a", "b"]}]
`,
	`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: sc-%[1]d, namespace: ns-%[2]d}
spec:
  workloadSelector: {labels: {app: svc-%[1]d}}
  egress: [{hosts: ["./*", "istio-system/*"]}]
`,
	`apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: we-%[1]d, namespace: ns-%[2]d}
spec:
  address: 10.1.%[3]d.%[4]d
  labels: {app: svc-%[1]d, version: v1}
  ports: {http: 8080}
`,
	`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: hr-%[1]d, namespace: ns-%[2]d}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app-%[1]d.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs: [{name: svc-%[1]d, port: 8080}]
`,
}

// mixedInput renders n objects cycling through the templates.
func mixedInput(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, benchTemplates[i%len(benchTemplates)], i, i%50, (i/250)%250, i%250+1)
	}
	return b.String()
}

// BenchmarkParseConvertValidate10k measures parse + convert + validate of
// 10,000 mixed objects in one input. Reported: objects/s and B/object.
func BenchmarkParseConvertValidate10k(b *testing.B) {
	const n = 10000
	input := []byte(mixedInput(n))
	// sanity: every object must be accepted, or the benchmark measures errors
	for _, d := range crd.Parse(input, crd.Options{Validate: true, Domain: "cluster.local"}) {
		if d.Err != nil || d.Config == nil {
			b.Fatalf("doc %d rejected: %v", d.Index, d.Err)
		}
	}
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		docs := crd.Parse(input, crd.Options{Validate: true, Domain: "cluster.local"})
		if len(docs) != n {
			b.Fatalf("parsed %d objects", len(docs))
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	perObj := b.Elapsed().Seconds() / float64(b.N*n)
	b.ReportMetric(1/perObj, "objects/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N*n), "B/object")
}
