// Package helmbin gives tests the helm binary hack/helmbin.sh builds (make
// testbin) and renders Istio's Helm charts with it from the source of the
// Istio module in the Go module cache (test data only: the charts are never
// copied into this repository).
package helmbin
