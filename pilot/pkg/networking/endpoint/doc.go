// Package endpoint translates service endpoints into Envoy
// ClusterLoadAssignments (EDS): endpoints of one service port, filtered by
// subset labels and the proxy's network view, grouped by locality with
// weights and health; when network gateways exist, the endpoints of other
// networks are replaced by their gateways (network.go).
package endpoint
