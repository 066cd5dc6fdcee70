package xds

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
)

var (
	xdsClients = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pilot_xds",
		Help: "Number of connected xDS clients, by their Istio version.",
	}, []string{"version"})

	totalXDSRejects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pilot_total_xds_rejects",
		Help: "Responses rejected (NACKed) by proxies, by type.",
	}, []string{"type"})

	expiredNonce = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pilot_xds_expired_nonce",
		Help: "Requests carrying a nonce other than the last one sent (ignored), by type.",
	}, []string{"type"})

	configSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pilot_xds_config_size_bytes",
		Help:    "Size in bytes of the resources of one response, by type.",
		Buckets: []float64{1, 10000, 1000000, 4000000, 10000000, 40000000},
	}, []string{"type"})

	// xdsAuthFailures is ours: refused TLS streams, by stage
	// (authentication, authorization).
	xdsAuthFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "istiod_xds_auth_failures",
		Help: "xDS streams over TLS refused, by stage: authentication (no accepted credential) or authorization (identity does not match the node).",
	}, []string{"stage"})

	// rateLimited is ours: streams refused for the new-stream rate limit.
	rateLimited = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "istiod_xds_rate_limited",
		Help: "New xDS streams refused with ResourceExhausted by the rate limit (PILOT_MAX_REQUESTS_PER_SECOND).",
	})

	xdsSends = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pilot_xds_responses_total",
		Help: "Responses sent, by type.",
	}, []string{"type"})
)

func init() {
	monitoring.MustRegister(xdsClients, totalXDSRejects, expiredNonce, configSize, xdsSends, xdsAuthFailures, rateLimited)
}

// recordSend counts one response: its size, and the push of its type with
// the time since generation started.
func recordSend(typeURL string, size int, start time.Time) {
	t := ShortType(typeURL)
	configSize.WithLabelValues(t).Observe(float64(size))
	xdsSends.WithLabelValues(t).Inc()
	RecordXDSPush(t, time.Since(start))
}
