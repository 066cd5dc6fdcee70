// Package dashboards checks that istiod exports what Istio 1.31's own
// monitoring reads: every metric of the PromQL expressions of Istio's
// control-plane dashboard (manifests/addons/dashboards/pilot-dashboard.gen.json
// and the pilot.libsonnet it is generated from, read from the istio.io/istio
// module in the Go module cache), with the labels those expressions select
// and group by, must be on the /metrics of a real istiod once the code paths
// that record it have run. Metrics other components export (the kubelet's
// container_*, the proxies' envoy_*) are listed with their exporter, not
// skipped. Istio's module ships no alert rules (its sample Prometheus has
// empty rule files); the test fails if a later module does, so that their
// expressions get checked too.
package dashboards
