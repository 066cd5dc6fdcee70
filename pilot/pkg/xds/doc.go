// Package xds is the ADS wire layer: state-of-the-world and delta streams
// with their wire rules (ads.go, delta.go, stream.go), connections and what
// they watch (connection.go), the generator registry (generator.go), the
// throttle, the per-push callback that installs snapshots and queues
// connections (push.go), resources held back for failing validation
// (held.go) and copies of connection state for debug views (snapshot.go).
// It depends on the model only: generators register through Generator,
// the push engine (pushengine) calls PushFunc, and the debug endpoints
// (debug) read ConnectionSnapshots.
package xds
