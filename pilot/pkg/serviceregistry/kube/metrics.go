package kube

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// registryEvents counts the events of the registry's inputs, as Istio's
// pilot_k8s_reg_events.
var registryEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pilot_k8s_reg_events",
	Help: "Events from the Kubernetes registry, by type (Services, EndpointSlice, Pods, Nodes, Namespaces) and event.",
}, []string{"type", "event"})

func init() { monitoring.MustRegister(registryEvents) }

// countEvents counts the events of c (the initial objects as adds) under
// typ.
func countEvents[T any](c krt.Collection[T], typ string) krt.HandlerRegistration {
	return c.RegisterBatch(func(events []krt.Event[T]) {
		for _, e := range events {
			registryEvents.WithLabelValues(typ, e.Event.String()).Inc()
		}
	}, true)
}
