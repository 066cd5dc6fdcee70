// Command loadtest connects N simulated sidecars to a real istiod over delta
// ADS and measures time to full config and, after one VirtualService edit,
// time until every sidecar has the new routes, with istiod's CPU and memory.
//
//	go run ./tests/loadtest -n 1000 -services 100
//
// It generates a mesh directory, builds and starts cmd/istiod on free
// loopback ports, and stops it at the end. It exits non-zero when a sidecar
// failed, a response broke a wire rule, or a phase did not complete.
package main
