// Package xds is the ADS server: state-of-the-world and delta streams with
// their wire rules (generator.go, ads.go, delta.go, connection.go), the push
// engine that turns changes into pushes (debounce, queue, pushz), the
// generators of sidecar configuration (gen_*.go), and the debug endpoints
// that show what the control plane believes.
package xds
