package generators_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/refmesh"
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

// edgeRouter is the router of the Gateway API Gateway shop/edge: no Pod
// and no endpoints, found through the labels its generated Service selects.
var edgeRouter = adsc.Config{
	Delta:  true,
	NodeID: "router~10.244.9.2~edge-istio-abc.shop~shop.svc.cluster.local",
	Metadata: map[string]any{
		"NAMESPACE": "shop", "CLUSTER_ID": "Kubernetes", "MESH_ID": "cluster.local",
		"LABELS": map[string]any{"gateway.networking.k8s.io/gateway-name": "edge", "app": "edge-istio"}, "INSTANCE_IPS": "10.244.9.2",
	},
}

// TestEdgeGatewayConfigMatchesIstio compares what the Gateway API
// gateway's router gets, from the synthetic Gateway and VirtualService
// Istio derived (reference configz; their derivation is tested with the
// translation), with what Istio's istiod sent it.
func TestEdgeGatewayConfigMatchesIstio(t *testing.T) {
	compareWithIstio(t, refmesh.Gateways, edgeRouter, "real/router-edge", nil)
}
