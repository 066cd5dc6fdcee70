package pushengine

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// Metrics of the push decisions, with Istio's names, labels and buckets.
// Counters are declared without the _total suffix because Istio exposes
// them that way.
var (
	metricPushTriggers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pilot_push_triggers",
		Help: "Times a push was requested, by the reason of the request.",
	}, []string{"type"})

	metricDebounceTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pilot_debounce_time",
		Help:    "Seconds from the first change entering the debouncer until the merged request is released for pushing.",
		Buckets: []float64{.01, .1, 1, 3, 5, 10, 20, 30},
	})

	metricInboundUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pilot_inbound_updates",
		Help: "Change notifications received, by type (config, eds, svc, svcdelete).",
	}, []string{"type"})
)

func init() {
	monitoring.MustRegister(metricPushTriggers, metricDebounceTime, metricInboundUpdates)
}

// Values of the type label of pilot_inbound_updates.
const (
	InboundConfig        = "config"
	InboundEDS           = "eds"
	InboundService       = "svc"
	InboundServiceDelete = "svcdelete"
)

// RecordInboundUpdate counts one change notification of a type
// (InboundConfig, InboundEDS, ...).
func RecordInboundUpdate(typ string) { metricInboundUpdates.WithLabelValues(typ).Inc() }

// RecordPushTriggers adds a request's reasons to pilot_push_triggers.
func RecordPushTriggers(reasons model.ReasonStats) {
	for r, n := range reasons {
		metricPushTriggers.WithLabelValues(string(r)).Add(float64(n))
	}
}

func recordDebounceTime(d time.Duration) { metricDebounceTime.Observe(d.Seconds()) }
