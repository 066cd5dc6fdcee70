package generators_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/refmesh"
)

// reviewsProxy is the reviews-v1 sidecar of the extensions reference: no
// Pod, its IP is an endpoint of reviews.
var reviewsProxy = adsc.Config{
	Delta:  true,
	NodeID: "sidecar~10.244.0.21~reviews-v1-abc.bookinfo~bookinfo.svc.cluster.local",
	// the reference run's client sent the pod as the node's cluster (the
	// OpenTelemetry spans' service name shows it)
	Cluster: "reviews-v1-abc.bookinfo",
	Metadata: map[string]any{
		"NAMESPACE": "bookinfo", "CLUSTER_ID": "Kubernetes", "MESH_ID": "cluster.local",
		"LABELS":          map[string]any{"app": "reviews", "version": "v1"},
		"SERVICE_ACCOUNT": "bookinfo-reviews", "WORKLOAD_NAME": "reviews-v1",
		"INSTANCE_IPS": "10.244.0.21", "INTERCEPTION_MODE": "REDIRECT",
	},
}

// extensionsAllowed are the differences allowed on the extensions
// reference: none.
var extensionsAllowed = map[string]map[string]string{}

// TestExtensionsMatchIstio compares what the two sidecars of the
// extensions reference (Sidecar, Telemetry and EnvoyFilter on bookinfo)
// get with what Istio's istiod sent them.
func TestExtensionsMatchIstio(t *testing.T) {
	t.Run("productpage", func(t *testing.T) {
		proxy := referenceProxy
		proxy.Cluster = "productpage-v1-abc.bookinfo"
		compareWithIstio(t, refmesh.Extensions, proxy, "real/sidecar-productpage", extensionsAllowed)
	})
	t.Run("reviews", func(t *testing.T) {
		compareWithIstio(t, refmesh.Extensions, reviewsProxy, "real/sidecar-reviews", extensionsAllowed)
	})
}
