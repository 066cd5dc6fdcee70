// Package telemetry builds the filters and settings Istio's proxies use for
// telemetry and peer discovery, which every sidecar listener and cluster
// carries: the metadata exchange (network, upstream and HTTP peer metadata),
// gRPC stats, Istio's ALPN override and the HCM tracing block.
//
// The filter configs never vary: they are packed once and shared, so
// callers must not modify them. Tracing returns a fresh message.
package telemetry
