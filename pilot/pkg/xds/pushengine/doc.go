// Package pushengine turns change notifications into pushes: NeedsPush
// filtering of config events, the debouncer, one push at a time through a
// callback, and the record behind /debug/pushz. It knows nothing of gRPC
// or of connections; the xDS server's PushFunc is its callback.
package pushengine
