package kube_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	registry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
)

func gatewayCRD() *apiextv1.CustomResourceDefinition {
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gateways.gateway.networking.k8s.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{Group: "gateway.networking.k8s.io",
			Names:    apiextv1.CustomResourceDefinitionNames{Plural: "gateways", Kind: "Gateway"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}},
		Status: apiextv1.CustomResourceDefinitionStatus{Conditions: []apiextv1.CustomResourceDefinitionCondition{
			{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}},
	}
}

func addrOf(t gatewayv1.AddressType, v string) gatewayv1.GatewaySpecAddress {
	return gatewayv1.GatewaySpecAddress{Type: &t, Value: v}
}

// eastWestGateway is a Gateway labelled with network nw, with addresses
// of each type and listeners of each kind.
func eastWestGateway(name, class string, labels, annotations map[string]string) *gatewayv1.Gateway {
	passthrough := gatewayv1.TLSModePassthrough
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-system", Labels: labels, Annotations: annotations},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(class),
			Addresses: []gatewayv1.GatewaySpecAddress{
				addrOf(gatewayv1.IPAddressType, "1.2.3.4"),
				addrOf(gatewayv1.HostnameAddressType, "gw.example.com"),
				addrOf(gatewayv1.NamedAddressType, "named"), // not an address
			},
			Listeners: []gatewayv1.Listener{
				{Name: "by-option", Port: 35443, Protocol: gatewayv1.TLSProtocolType, TLS: &gatewayv1.ListenerTLSConfig{Mode: &passthrough,
					Options: map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{"gateway.istio.io/listener-protocol": "auto-passthrough"}}},
				{Name: "by-port", Port: 15443, Protocol: gatewayv1.TLSProtocolType, TLS: &gatewayv1.ListenerTLSConfig{Mode: &passthrough}},
				{Name: "plain", Port: 15443, Protocol: gatewayv1.TCPProtocolType}, // no TLS: not passthrough
				{Name: "other-tls", Port: 8443, Protocol: gatewayv1.TLSProtocolType, TLS: &gatewayv1.ListenerTLSConfig{Mode: &passthrough}},
				{Name: "mesh", Port: 15008, Protocol: "HBONE"},
			},
		},
	}
}

// Gateways from Gateway API Gateways labelled topology.istio.io/network:
// each IP or hostname of spec.addresses, on each auto-passthrough listener
// (by option or on the gateway port) and each HBONE listener; the service
// account from the annotation or the name; class istio-remote counts in
// the config cluster only; a deleted Gateway's gateways go with a forced
// push.
func TestNetworkGatewaysFromGatewayAPI(t *testing.T) {
	nw := map[string]string{model.NetworkLabel: "nw2"}
	objs := []runtime.Object{gatewayCRD(),
		eastWestGateway("eastwest", "istio", nw, nil),
		eastWestGateway("remote", "istio-remote", nw, nil),
		eastWestGateway("custom", "istio", map[string]string{model.NetworkLabel: "nw3", model.GatewayPortLabel: "8443"},
			map[string]string{"gateway.istio.io/service-account": "custom-sa"}),
		eastWestGateway("unlabelled", "istio", nil, nil),
	}
	sa := func(name string) model.NamespacedName {
		return model.NamespacedName{Namespace: "istio-system", Name: name}
	}
	gw := func(nw, addr string, port, hbone uint32, account string) model.NetworkGateway {
		return model.NetworkGateway{Network: nw, Cluster: "cluster1", Addr: addr, Port: port, HBONEPort: hbone, ServiceAccount: sa(account)}
	}
	forGateway := func(nw, account string, mtls ...uint32) []model.NetworkGateway {
		var out []model.NetworkGateway
		for _, addr := range []string{"1.2.3.4", "gw.example.com"} {
			for _, p := range mtls {
				out = append(out, gw(nw, addr, p, 0, account))
			}
			out = append(out, gw(nw, addr, 15008, 15008, account))
		}
		return out
	}
	expect := func(groups ...[]model.NetworkGateway) []model.NetworkGateway {
		var out []model.NetworkGateway
		for _, g := range groups {
			out = append(out, g...)
		}
		return model.SortGateways(out)
	}

	t.Run("remote cluster", func(t *testing.T) {
		f := newFixture(t, registry.Options{ClusterID: "cluster1"}, objs...)
		want := expect(forGateway("nw2", "eastwest", 15443, 35443), forGateway("nw3", "custom-sa", 8443, 35443))
		f.eventually("gateways", func() bool { return slices.Equal(f.reg.NetworkGateways(), want) })

		seq := f.rec.Seq()
		if err := f.client.GatewayAPI().GatewayV1().Gateways("istio-system").Delete(ctx, "custom", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.wait(f.rec, seq, "forced push", func(e model.XDSEvent) bool {
			return e.Type == model.XDSEventConfig && e.Push.Forced && e.Push.Reason.Has(model.NetworksTrigger)
		})
		want = expect(forGateway("nw2", "eastwest", 15443, 35443))
		f.eventually("gateway deleted", func() bool { return slices.Equal(f.reg.NetworkGateways(), want) })
	})
	t.Run("config cluster", func(t *testing.T) {
		f := newFixture(t, registry.Options{ClusterID: "cluster1", ConfigCluster: true}, objs...)
		want := expect(forGateway("nw2", "eastwest", 15443, 35443), forGateway("nw2", "remote-istio-remote", 15443, 35443),
			forGateway("nw3", "custom-sa", 8443, 35443))
		f.eventually("gateways", func() bool { return slices.Equal(f.reg.NetworkGateways(), want) })
	})
}

// A cluster without the Gateway CRD syncs without Gateways; once the CRD
// is established its Gateways are read.
func TestNetworkGatewaysGatewayAPIDelayed(t *testing.T) {
	f := newFixture(t, registry.Options{ClusterID: "cluster1"})
	if gws := f.reg.NetworkGateways(); len(gws) != 0 {
		t.Fatalf("gateways before the CRD: %v", gws)
	}
	if _, err := f.client.GatewayAPI().GatewayV1().Gateways("istio-system").Create(ctx,
		eastWestGateway("eastwest", "istio", map[string]string{model.NetworkLabel: "nw2"}, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Extensions().ApiextensionsV1().CustomResourceDefinitions().Create(ctx, gatewayCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("gateways once the CRD is there", func() bool { return len(f.reg.NetworkGateways()) == 6 })
}

func node(name string, labels map[string]string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Addresses: addrs}}
}

func external(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip}
}

func internal(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}
}

func nodePortGateway(name string, annotations map[string]string, externalIPs ...string) *corev1.Service {
	tls, hbone := port("tls", 15443), port("hbone", 15008)
	tls.NodePort, hbone.NodePort = 31443, 31008
	s := service("istio-system", name, "10.96.9.10", map[string]string{"app": name}, tls, hbone)
	s.Labels = map[string]string{model.NetworkLabel: "network2"}
	s.Annotations = annotations
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.ExternalIPs = externalIPs
	return s
}

// A NodePort gateway annotated traffic.istio.io/nodeSelector is reached
// at the ExternalIP of each selected node on the node port of its gateway
// port; nodes changing change it (with a forced push). With externalIPs
// those are its addresses, still on the node port. Without the annotation
// a NodePort Service has no address.
func TestNetworkGatewaysNodePort(t *testing.T) {
	sel := map[string]string{"traffic.istio.io/nodeSelector": `{"role":"gw"}`}
	f := newFixture(t, registry.Options{ClusterID: "cluster2"},
		node("n1", map[string]string{"role": "gw"}, internal("10.0.0.1"), external("35.1.1.1")),
		node("n2", map[string]string{"role": "gw"}, internal("10.0.0.2")), // no ExternalIP
		node("n3", map[string]string{"role": "other"}, external("35.1.1.3")),
		nodePortGateway("selected", sel),
		nodePortGateway("with-external-ips", sel, "35.9.9.9"),
		nodePortGateway("not-annotated", nil),
	)
	gw := func(addr string) model.NetworkGateway {
		return model.NetworkGateway{Network: "network2", Cluster: "cluster2", Addr: addr, Port: 31443, HBONEPort: 15008}
	}
	want := []model.NetworkGateway{gw("35.1.1.1"), gw("35.9.9.9")}
	f.eventually("gateways", func() bool { return slices.Equal(f.reg.NetworkGateways(), want) })

	seq := f.rec.Seq()
	n3 := node("n3", map[string]string{"role": "gw"}, external("35.1.1.3"))
	if _, err := f.client.Kube().CoreV1().Nodes().Update(ctx, n3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(f.rec, seq, "forced push", func(e model.XDSEvent) bool {
		return e.Type == model.XDSEventConfig && e.Push.Forced && e.Push.Reason.Has(model.NetworksTrigger)
	})
	want = []model.NetworkGateway{gw("35.1.1.1"), gw("35.1.1.3"), gw("35.9.9.9")}
	f.eventually("relabelled node selected", func() bool { return slices.Equal(f.reg.NetworkGateways(), want) })

	if err := f.client.Kube().CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = []model.NetworkGateway{gw("35.1.1.3"), gw("35.9.9.9")}
	f.eventually("deleted node gone", func() bool { return slices.Equal(f.reg.NetworkGateways(), want) })

	n2 := node("n2", map[string]string{"role": "gw"}, internal("10.0.0.2"), external("35.1.1.2"))
	if _, err := f.client.Kube().CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want = []model.NetworkGateway{gw("35.1.1.2"), gw("35.1.1.3"), gw("35.9.9.9")}
	f.eventually("node with a new ExternalIP", func() bool { return slices.Equal(f.reg.NetworkGateways(), want) })
}
