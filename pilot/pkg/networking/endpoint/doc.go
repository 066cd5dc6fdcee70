// Package endpoint translates service endpoints into Envoy
// ClusterLoadAssignments (EDS): endpoints of one service port, filtered by
// subset labels and network, grouped by locality with weights and health.
package endpoint
