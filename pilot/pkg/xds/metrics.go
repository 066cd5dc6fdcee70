package xds

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
)

// Metrics of the push engine, with Istio's names, labels and buckets, so
// that Istio's dashboards keep working. Counters are declared without the
// _total suffix because Istio exposes them that way.
var (
	metricXDSPushes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pilot_xds_pushes",
		Help: "Pushes of each xDS type (cds, eds, lds, rds, ...), and failed sends as <type>_senderr.",
	}, []string{"type"})

	metricProxyConvergence = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pilot_proxy_convergence_time",
		Help:    "Seconds from a configuration change until a proxy has received everything that change required.",
		Buckets: []float64{.1, .5, 1, 3, 5, 10, 20, 30},
	})

	metricProxyQueueTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pilot_proxy_queue_time",
		Help:    "Seconds a proxy waited in the push queue before a worker took it.",
		Buckets: []float64{.1, .5, 1, 3, 5, 10, 20, 30},
	})

	metricPushContextInit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pilot_pushcontext_init_seconds",
		Help:    "Seconds taken to build a push context.",
		Buckets: []float64{.01, .1, 0.5, 1, 3, 5},
	})

	metricXDSPushTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pilot_xds_push_time",
		Help:    "Seconds taken to generate and send one xDS type to a proxy, by type.",
		Buckets: []float64{.01, .1, 1, 3, 5, 10, 20, 30},
	}, []string{"type"})

	metricServices = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pilot_services",
		Help: "Services known to the control plane.",
	})

	metricVirtualServices = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pilot_virt_services",
		Help: "Virtual services known to the control plane.",
	})
)

func init() {
	monitoring.MustRegister(metricXDSPushes, metricProxyConvergence, metricProxyQueueTime,
		metricPushContextInit, metricXDSPushTime,
		metricServices, metricVirtualServices)
}

// RecordXDSPush counts one push of an xDS type and its duration. typ is the
// short type name (cds, eds, lds, rds, sds, ...).
func RecordXDSPush(typ string, d time.Duration) {
	metricXDSPushes.WithLabelValues(typ).Inc()
	metricXDSPushTime.WithLabelValues(typ).Observe(d.Seconds())
}

// RecordXDSSendError counts a failed send of an xDS type (<type>_senderr).
func RecordXDSSendError(typ string) { metricXDSPushes.WithLabelValues(typ + "_senderr").Inc() }

// RecordProxyConvergence observes the delay from a change to a proxy having
// received all it needed.
func RecordProxyConvergence(d time.Duration) { metricProxyConvergence.Observe(d.Seconds()) }

// RecordPushContextInit observes the build time of a push context.
func RecordPushContextInit(d time.Duration) { metricPushContextInit.Observe(d.Seconds()) }

// SetServiceCount sets pilot_services.
func SetServiceCount(n int) { metricServices.Set(float64(n)) }

// SetVirtualServiceCount sets pilot_virt_services.
func SetVirtualServiceCount(n int) { metricVirtualServices.Set(float64(n)) }

func recordQueueTime(d time.Duration) { metricProxyQueueTime.Observe(d.Seconds()) }
