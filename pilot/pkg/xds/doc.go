// Package xds is the ADS wire layer: state-of-the-world and delta streams
// with their wire rules (ads.go, delta.go, stream.go), connections and what
// they watch (connection.go), the generator registry (generator.go), the
// throttle and the send deadline (throttle.go, send.go), the per-push
// callback that installs snapshots and queues connections (push.go),
// resources held back for failing validation (held.go) and copies of
// connection state for debug views (snapshot.go).
//
// What a server keeps for its clients is its own and bounded by them: the
// bases of sent versions go with a scope's last connection (sent.go), the
// encodings of cached resources with their resources (resource.go), the
// subscriptions and interned names with the last subscription holding them
// (nameset.go, intern.go). Two servers in one process share nothing but
// the runtime's intern map, which is content-addressed.
//
// It depends on the model only: generators register through Generator,
// the push engine (pushengine) calls PushFunc, and the debug endpoints
// (debug) read ConnectionSnapshots.
package xds
