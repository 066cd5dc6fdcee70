package differential_test

import (
	"testing"

	"github.com/meshplane/istiod/tests/differential"
)

// A Sidecar with an ingress listener on reviews' workload: Istio gives the
// listener's port a synthetic hostname, "<sidecar>.<namespace>", and the
// inbound route's trace operation names it ("reviews-sink.sink:9080/*"),
// not the service that targets the port; the inbound cluster still takes
// the service.
func TestSidecarIngressListenerDecorator(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name: "sidecar ingress listener decorator",
		Objects: bookinfoObjects("sink", "13") + `
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: reviews-sink, namespace: sink}
spec:
  workloadSelector: {labels: {app: reviews}}
  ingress:
  - port: {number: 9080, protocol: HTTP, name: http}
    defaultEndpoint: 127.0.0.1:9080
  - port: {number: 9090, protocol: HTTP, name: http-admin}
    defaultEndpoint: 127.0.0.1:9090
  egress:
  - hosts: ["./*", "istio-system/*"]
`,
		Proxy: differential.Proxy{Pod: "reviews-v1-5f6d7-abcde", Namespace: "sink"},
	})
}
