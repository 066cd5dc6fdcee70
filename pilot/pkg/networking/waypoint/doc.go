// Package waypoint translates what a waypoint proxy serves into Envoy
// configuration, as Istio's istiod builds it for a proxy of type
// "waypoint" (ambient mode): the HBONE termination listener
// (connect_terminate, port 15008), the internal listener it hands each
// tunnelled connection to (main_internal: one filter chain per port of
// every service that uses the waypoint, named
// inbound-vip|<port>|<http|tcp>|<host>, plus direct-tcp and direct-http
// for workload addressing), the HBONE origination listener
// (connect_originate), and the clusters and load assignments behind them.
//
// The translation is pure: the caller (pilot/pkg/xds/generators) resolves
// which services use the waypoint, their VirtualServices and
// authorization filters, and the endpoints; this package only shapes
// protos.
//
// # Not built (yet)
//
// East-west gateways and multi-network (double HBONE, authority matching),
// DestinationRule TLS origination (SIMPLE, MUTUAL) and proxy protocol on
// inbound-vip clusters (the rest of the traffic policy and the subsets
// are applied),
// DYNAMIC_DNS services of the mesh's outside (they get an EDS cluster, not
// Istio's dynamic forward proxy one),
// VirtualService TCP/TLS routes on tcp chains, access logs, the
// Telemetry API's stats filters and traffic extensions (WasmPlugins), and
// the waypoint's peer tracing tags (istio.source_* and
// istio.destination_*, read with CustomTag.value, a field the Envoy API
// version this module builds with, go-control-plane envoy v1.36, lacks).
package waypoint
