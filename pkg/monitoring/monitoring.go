package monitoring

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is the process registry served on /metrics, with the Go runtime
// and process collectors.
var Registry = newRegistry()

func newRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// MustRegister registers collectors on the process registry.
func MustRegister(cs ...prometheus.Collector) { Registry.MustRegister(cs...) }

// Handler serves the registry in the Prometheus exposition format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry})
}

// Metrics every config source reports.
var (
	// ConfigEvents counts config events per kind and event, as Istio's
	// pilot_k8s_cfg_events (the directory source reports here too).
	ConfigEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pilot_k8s_cfg_events",
		Help: "Events from the config sources, by kind and event (add, update, delete).",
	}, []string{"type", "event"})

	// RejectedConfigs counts documents or objects rejected at the edge.
	RejectedConfigs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "istiod_config_rejected_total",
		Help: "Configuration documents rejected at ingestion (unparsable, invalid, or of a kind not stored), by source and reason.",
	}, []string{"source", "reason"})
)

func init() {
	MustRegister(ConfigEvents, RejectedConfigs)
}
