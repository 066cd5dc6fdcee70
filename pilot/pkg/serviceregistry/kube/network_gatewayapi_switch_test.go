package kube_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	registry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API=false (NoGatewayAPINetworks):
// as in Istio, a Gateway labelled topology.istio.io/network is no network
// gateway (whatever its class); labelled Services still are.
func TestNoGatewayAPINetworks(t *testing.T) {
	nw := map[string]string{model.NetworkLabel: "nw2"}
	svcGateway := gatewayService("eastwest-svc", nw, []corev1.ServicePort{port("tls", 15443)},
		[]corev1.LoadBalancerIngress{{IP: "35.0.0.1"}})
	wantServices := []model.NetworkGateway{{Network: "nw2", Cluster: "cluster1", Addr: "35.0.0.1", Port: 15443}}

	t.Run("informers", func(t *testing.T) {
		objs := []runtime.Object{gatewayCRD(), svcGateway,
			eastWestGateway("eastwest", "istio", nw, nil), eastWestGateway("remote", "istio-remote", nw, nil)}
		f := newFixture(t, registry.Options{ClusterID: "cluster1", ConfigCluster: true, NoGatewayAPINetworks: true}, objs...)
		f.eventually("service gateway", func() bool { return len(f.reg.NetworkGateways()) > 0 })
		// give a Gateway informer, were one started, the time to deliver
		time.Sleep(100 * time.Millisecond)
		if got := f.reg.NetworkGateways(); !slices.Equal(got, wantServices) {
			t.Fatalf("gateways: got %v, want only the Service's %v", got, wantServices)
		}
	})

	t.Run("collections", func(t *testing.T) {
		for _, off := range []bool{false, true} {
			stop := make(chan struct{})
			in := registry.Inputs{
				Services:       krt.NewStaticCollection([]*corev1.Service{svcGateway}),
				EndpointSlices: krt.NewStaticCollection[*discoveryv1.EndpointSlice](nil),
				Pods:           krt.NewStaticCollection[*corev1.Pod](nil),
				Nodes:          krt.NewStaticCollection[*corev1.Node](nil),
				Namespaces:     krt.NewStaticCollection[*corev1.Namespace](nil),
				Gateways:       krt.NewStaticCollection([]*gatewayv1.Gateway{eastWestGateway("eastwest", "istio", nw, nil)}),
			}
			reg := registry.NewFromCollections(in, registry.Options{ClusterID: "cluster1", NoGatewayAPINetworks: off,
				XDSUpdater: model.NewRecordingXDSUpdater(0), Stop: stop})
			deadline := time.Now().Add(30 * time.Second)
			for !reg.HasSynced() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			want := len(wantServices) + 6 // the Gateway: 2 addresses × (2 passthrough + 1 HBONE listeners)
			if off {
				want = len(wantServices)
			}
			for len(reg.NetworkGateways()) < want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			if got := reg.NetworkGateways(); len(got) != want {
				t.Errorf("NoGatewayAPINetworks=%v: %d gateways %v, want %d", off, len(got), got, want)
			}
			close(stop)
		}
	})
}
