// Package monitoring owns the Prometheus registry of the process and the
// metrics shared across layers. Metrics specific to one component are
// declared next to that component, registered here.
package monitoring
