package endpoint_test

import (
	"encoding/json"
	"reflect"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
)

func ep(addr, port string, labels map[string]string, health model.HealthStatus, locality string) *model.IstioEndpoint {
	return &model.IstioEndpoint{Addresses: []string{addr}, EndpointPort: 9080, ServicePortName: port, Labels: labels,
		HealthStatus: health, SendUnhealthyEndpoints: true, Locality: model.Locality{Label: locality, ClusterID: "Kubernetes"}, TLSMode: "disabled"}
}

func TestMatchesIstioShape(t *testing.T) {
	got := endpoint.Build("outbound|9080||productpage.bookinfo.svc.cluster.local", []*model.IstioEndpoint{{
		Addresses: []string{"10.244.0.10"}, EndpointPort: 9080, ServicePortName: "http", HealthStatus: model.Healthy,
		Labels: map[string]string{"app": "productpage", "version": "v1"}, Namespace: "bookinfo", WorkloadName: "productpage-v1-abc",
		Locality: model.Locality{ClusterID: "Kubernetes"}, TLSMode: "disabled", SendUnhealthyEndpoints: true,
	}}, endpoint.Options{PortName: "http"})
	if err := got.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	want := `{"clusterName": "outbound|9080||productpage.bookinfo.svc.cluster.local", "endpoints": [{"locality": {}, "lbEndpoints": [{"endpoint": {"address": {"socketAddress": {"address": "10.244.0.10", "portValue": 9080}}}, "healthStatus": "HEALTHY", "metadata": {"filterMetadata": {"istio": {"workload": "productpage-v1-abc;bookinfo;productpage;v1;Kubernetes"}}}, "loadBalancingWeight": 1}], "loadBalancingWeight": 1}]}`
	b, _ := protojson.Marshal(got)
	var g, w any
	_ = json.Unmarshal(b, &g)
	_ = json.Unmarshal([]byte(want), &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got %s\nwant %s", b, want)
	}
}

func TestSelectionGroupingAndHealth(t *testing.T) {
	eps := []*model.IstioEndpoint{
		ep("10.0.0.1", "http", map[string]string{"version": "v1"}, model.Healthy, "r1/z1"),
		ep("10.0.0.2", "http", map[string]string{"version": "v2"}, model.Healthy, "r1/z2"),
		ep("10.0.0.3", "http", map[string]string{"version": "v1"}, model.UnHealthy, "r1/z1"),
		ep("10.0.0.4", "grpc", map[string]string{"version": "v1"}, model.Healthy, "r1/z1"),
		ep("10.0.0.5", "http", map[string]string{"version": "v1"}, model.Terminating, "r1/z1"),
	}
	eps[1].LbWeight = 3
	all := endpoint.Build("c", eps, endpoint.Options{PortName: "http"})
	if len(all.Endpoints) != 2 || all.Endpoints[0].Locality.Zone != "z1" || len(all.Endpoints[0].LbEndpoints) != 2 || all.Endpoints[1].LoadBalancingWeight.Value != 3 {
		t.Fatalf("grouping: %v", all)
	}
	if all.Endpoints[0].LbEndpoints[1].HealthStatus != core.HealthStatus_UNHEALTHY {
		t.Error("unhealthy endpoint not marked")
	}
	v1 := endpoint.Build("c", eps, endpoint.Options{PortName: "http", SubsetLabels: map[string]string{"version": "v1"}})
	if len(v1.Endpoints) != 1 || len(v1.Endpoints[0].LbEndpoints) != 2 {
		t.Errorf("subset: %v", v1)
	}
	none := endpoint.Build("c", eps, endpoint.Options{PortName: "http", SubsetLabels: map[string]string{"version": "v9"}})
	if len(none.Endpoints) != 0 || none.ClusterName != "c" {
		t.Errorf("empty subset: %v", none)
	}
	// without any network gateway every endpoint is sent whatever its
	// network, as in Istio (network.go covers the gateways)
	eps[0].Network, eps[1].Network = "n1", "n2"
	n1 := endpoint.Build("c", eps[:2], endpoint.Options{PortName: "http", Network: "n1"})
	if len(n1.Endpoints) != 2 {
		t.Errorf("no gateways: %v", n1)
	}
	eps[0].TLSMode = model.IstioMutualTLSModeLabel
	m := endpoint.Build("c", eps[:1], endpoint.Options{PortName: "http"})
	if m.Endpoints[0].LbEndpoints[0].Metadata.FilterMetadata["envoy.transport_socket_match"].Fields["tlsMode"].GetStringValue() != "istio" {
		t.Error("tlsMode metadata missing")
	}
}

// The workload metadata leaves the default revision out, as Istio's does:
// an injected gateway pod carries canonical-revision "latest", and its
// endpoints read "…;portal-istio;;Kubernetes".
func TestWorkloadMetadataLeavesLatestOut(t *testing.T) {
	got := endpoint.Build("outbound|80||portal.shop.svc.cluster.local", []*model.IstioEndpoint{{
		Addresses: []string{"10.244.0.11"}, EndpointPort: 80, ServicePortName: "http", HealthStatus: model.Healthy,
		Labels:    map[string]string{"service.istio.io/canonical-name": "portal-istio", "service.istio.io/canonical-revision": "latest"},
		Namespace: "shop", WorkloadName: "portal-istio", Locality: model.Locality{ClusterID: "Kubernetes"}, SendUnhealthyEndpoints: true,
	}}, endpoint.Options{PortName: "http"})
	md := got.Endpoints[0].LbEndpoints[0].Metadata.FilterMetadata["istio"].Fields["workload"].GetStringValue()
	if md != "portal-istio;shop;portal-istio;;Kubernetes" {
		t.Errorf("istio.workload %q, want the revision left out", md)
	}
}
