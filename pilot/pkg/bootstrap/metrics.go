package bootstrap

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
	"github.com/meshplane/istiod/pkg/version"
)

var (
	startTime   = time.Now()
	metricsOnce sync.Once
)

// initMetrics registers the process-wide metrics once.
func initMetrics() {
	metricsOnce.Do(func() {
		info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pilot_info",
			Help: "Pilot version and build information.",
		}, []string{"version"})
		info.WithLabelValues(version.Get().Version).Set(1)
		uptime := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "istiod_uptime_seconds",
			Help: "Current istiod server uptime in seconds.",
		}, func() float64 { return time.Since(startTime).Seconds() })
		monitoring.MustRegister(info, uptime)
	})
}

func metricsHandler() http.Handler { return monitoring.Handler() }

func versionHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(version.Get())
}
