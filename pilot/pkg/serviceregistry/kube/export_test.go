package kube

import "github.com/prometheus/client_golang/prometheus"

// RegistryEvents exposes the pilot_k8s_reg_events counter to tests.
func RegistryEvents(typ, event string) prometheus.Counter {
	return registryEvents.WithLabelValues(typ, event)
}
