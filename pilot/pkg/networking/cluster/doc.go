// Package cluster translates services and destination rules into Envoy
// clusters, as pure functions: outbound clusters per service port and subset
// (`outbound|<port>|<subset>|<host>`), inbound clusters for a proxy's own
// ports (`inbound|<port>||`), and the BlackHole, Passthrough and
// InboundPassthrough clusters. Names, defaults and shapes follow Istio 1.31.
package cluster
