package version

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
)

// buildInfo is Istio's istio_build gauge: 1 for each component of the
// process, labelled with the build's tag. Istio's "Pilot Versions" panel
// and the usual IstioComponentDown alert select it by component.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "istio_build",
	Help: "Istio component build info",
}, []string{"component", "tag"})

func init() { monitoring.MustRegister(buildInfo) }

// RecordComponentBuildTag sets istio_build{component, tag} to 1, tag being
// this build's Version (Istio's git tag, e.g. "1.31.0"). istiod's discovery
// server is Istio's "pilot" component.
func RecordComponentBuildTag(component string) {
	buildInfo.WithLabelValues(component, Version).Set(1)
}
