package inject

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
)

// Istio's metric names and help texts. They are vectors without labels so
// that, as in Istio, a series appears only once it has been counted.
var (
	metricRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecar_injection_requests_total",
		Help: "Total number of sidecar injection requests.",
	}, nil)
	metricSuccess = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecar_injection_success_total",
		Help: "Total number of successful sidecar injection requests.",
	}, nil)
	metricFailure = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecar_injection_failure_total",
		Help: "Total number of failed sidecar injection requests.",
	}, nil)
	metricSkip = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecar_injection_skip_total",
		Help: "Total number of skipped sidecar injection requests.",
	}, nil)
	metricTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sidecar_injection_time_seconds",
		Help:    "Total time taken for injection in seconds.",
		Buckets: []float64{.1, 1, 3, 5, 10, 20, 30, 60},
	}, nil)
)

func init() {
	monitoring.MustRegister(metricRequests, metricSuccess, metricFailure, metricSkip, metricTime)
}
