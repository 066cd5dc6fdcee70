// Package gateway decides what a gateway proxy (a "router" node) serves:
// it selects the Istio Gateways that apply to the proxy and merges their
// servers into one logical gateway, port by port, as Istio 1.31 does
// (HTTP servers of a port share one route configuration, TLS servers are
// told apart by SNI, conflicting servers are dropped). Every server it
// drops is reported with the reason, where Istio only logs at debug level.
//
// The package is a pure translation of the model: no I/O, no clock.
package gateway
