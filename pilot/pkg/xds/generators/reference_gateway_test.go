package generators_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest/refmesh"
)

// ingressRouter is the ingress gateway whose configuration Istio's answer
// in ../shared/reference/gateways holds: no Pod, found through the
// EndpointSlice of its Service by IP.
var ingressRouter = adsc.Config{
	Delta:  true,
	NodeID: "router~10.244.9.1~istio-ingressgateway-abc.istio-system~istio-system.svc.cluster.local",
	Metadata: map[string]any{
		"NAMESPACE": "istio-system", "CLUSTER_ID": "Kubernetes", "MESH_ID": "cluster.local",
		"LABELS": map[string]any{"istio": "ingressgateway"}, "INSTANCE_IPS": "10.244.9.1",
	},
}

// TestIngressGatewayConfigMatchesIstio compares everything the ingress
// router gets (Istio Gateway shop/shop-gw: HTTP 8080 and HTTPS 8443 with
// credentialName) with what Istio's istiod sent it. There are no allowed
// differences.
func TestIngressGatewayConfigMatchesIstio(t *testing.T) {
	compareWithIstio(t, refmesh.Gateways, ingressRouter, "real/router-ingressgateway", nil)
}
