package autoregistration

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
)

// Istio's auto-registration counters, with its names.
var (
	successTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "auto_registration_success_total",
		Help: "WorkloadEntries created for connecting workloads.",
	})
	updatesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "auto_registration_updates_total",
		Help: "Existing auto-registered WorkloadEntries marked connected again.",
	})
	unregisterTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "auto_registration_unregister_total",
		Help: "Auto-registered WorkloadEntries marked disconnected.",
	})
	deletesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "auto_registration_deletes_total",
		Help: "Auto-registered WorkloadEntries deleted after their grace period.",
	})
	errorsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "auto_registration_errors_total",
		Help: "Failed auto-registrations, updates and cleanups of WorkloadEntries.",
	})
)

func init() {
	monitoring.MustRegister(successTotal, updatesTotal, unregisterTotal, deletesTotal, errorsTotal)
}
