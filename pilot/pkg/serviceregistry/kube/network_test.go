package kube_test

import (
	"slices"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshplane/istiod/pilot/pkg/model"
	registry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
)

func meshNetworks(nws map[string]*meshconfig.Network) *meshconfig.MeshNetworks {
	return &meshconfig.MeshNetworks{Networks: nws}
}

func fromRegistry(r string) *meshconfig.Network_NetworkEndpoints {
	return &meshconfig.Network_NetworkEndpoints{Ne: &meshconfig.Network_NetworkEndpoints_FromRegistry{FromRegistry: r}}
}

func fromCidr(c string) *meshconfig.Network_NetworkEndpoints {
	return &meshconfig.Network_NetworkEndpoints{Ne: &meshconfig.Network_NetworkEndpoints_FromCidr{FromCidr: c}}
}

func networkOf(t *testing.T, f *fixture, addr string) string {
	t.Helper()
	for _, e := range f.endpoints(host, "ns1") {
		if e.FirstAddress() == addr {
			return e.Network
		}
	}
	t.Fatalf("no endpoint %s", addr)
	return ""
}

// The network of an endpoint, as Istio's kube registry decides it: the
// pod's label, else the system namespace's label in this cluster, else
// meshNetworks (fromRegistry, then fromCidr), else none. The pod's own
// namespace's label does not count.
func TestEndpointNetworkPrecedence(t *testing.T) {
	objs := func(systemLabel string) []runtime.Object {
		sys := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}}
		if systemLabel != "" {
			sys.Labels = map[string]string{model.NetworkLabel: systemLabel}
		}
		return []runtime.Object{sys,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{model.NetworkLabel: "ns-own"}}},
			pod("ns1", "labelled", "10.0.0.1", map[string]string{"app": "reviews", model.NetworkLabel: "pod-net"}),
			pod("ns1", "plain", "10.0.0.2", map[string]string{"app": "reviews"}),
			service("ns1", "reviews", "10.96.0.5", map[string]string{"app": "reviews"}, port("http", 9080)),
			slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)},
				ep{addr: "10.0.0.1", pod: "labelled"}, ep{addr: "10.0.0.2", pod: "plain"}, ep{addr: "192.168.1.7"}),
		}
	}
	cidrs := meshNetworks(map[string]*meshconfig.Network{
		"wide":   {Endpoints: []*meshconfig.Network_NetworkEndpoints{fromCidr("192.168.0.0/16")}},
		"narrow": {Endpoints: []*meshconfig.Network_NetworkEndpoints{fromCidr("192.168.1.0/24")}},
	})
	registryNet := meshNetworks(map[string]*meshconfig.Network{
		"reg-net": {Endpoints: []*meshconfig.Network_NetworkEndpoints{fromRegistry("Kubernetes")}},
		"wide":    {Endpoints: []*meshconfig.Network_NetworkEndpoints{fromCidr("192.168.0.0/16")}},
	})
	for _, tc := range []struct {
		name        string
		system      string
		networks    *meshconfig.MeshNetworks
		plain, bare string
	}{
		{name: "nothing: no network", plain: "", bare: ""},
		{name: "system namespace label", system: "sys-net", networks: registryNet, plain: "sys-net", bare: "sys-net"},
		{name: "meshNetworks fromRegistry", networks: registryNet, plain: "reg-net", bare: "reg-net"},
		// Istio takes the widest CIDR holding the address
		{name: "meshNetworks fromCidr", networks: cidrs, plain: "", bare: "wide"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, registry.Options{SystemNamespace: "istio-system", MeshNetworks: tc.networks}, objs(tc.system)...)
			f.eventually("endpoints", func() bool { return len(f.endpoints(host, "ns1")) == 3 })
			if got := networkOf(t, f, "10.0.0.1"); got != "pod-net" {
				t.Errorf("pod label: network %q, want pod-net", got)
			}
			if got := networkOf(t, f, "10.0.0.2"); got != tc.plain {
				t.Errorf("pod without label: network %q, want %q", got, tc.plain)
			}
			if got := networkOf(t, f, "192.168.1.7"); got != tc.bare {
				t.Errorf("endpoint without pod: network %q, want %q", got, tc.bare)
			}
			// the same answer outside the registry (a WorkloadEntry's)
			if got := f.reg.Network("192.168.1.7", nil); got != tc.bare {
				t.Errorf("Network(192.168.1.7): %q, want %q", got, tc.bare)
			}
			if got := f.reg.Network("10.0.0.1", map[string]string{model.NetworkLabel: "pod-net"}); got != "pod-net" {
				t.Errorf("Network with a label: %q", got)
			}
		})
	}
}

// A change of the system namespace's label or of meshNetworks derives
// every endpoint's network again.
func TestEndpointNetworkFollowsChanges(t *testing.T) {
	sys := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}}
	f := newFixture(t, registry.Options{SystemNamespace: "istio-system"}, sys,
		pod("ns1", "plain", "10.0.0.2", map[string]string{"app": "reviews"}),
		service("ns1", "reviews", "10.96.0.5", map[string]string{"app": "reviews"}, port("http", 9080)),
		slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)}, ep{addr: "10.0.0.2", pod: "plain"}))
	f.eventually("endpoints", func() bool { return len(f.endpoints(host, "ns1")) == 1 })
	f.reg.SetMeshNetworks(meshNetworks(map[string]*meshconfig.Network{
		"reg-net": {Endpoints: []*meshconfig.Network_NetworkEndpoints{fromRegistry("Kubernetes")}}}))
	f.eventually("meshNetworks network", func() bool { return networkOf(t, f, "10.0.0.2") == "reg-net" })
	sys = sys.DeepCopy()
	sys.Labels = map[string]string{model.NetworkLabel: "sys-net"}
	if _, err := f.client.Kube().CoreV1().Namespaces().Update(ctx, sys, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("system namespace network", func() bool { return networkOf(t, f, "10.0.0.2") == "sys-net" })
}

func gatewayService(name string, labels map[string]string, ports []corev1.ServicePort, ingress []corev1.LoadBalancerIngress, externalIPs ...string) *corev1.Service {
	s := service("istio-system", name, "10.96.9.9", map[string]string{"app": name}, ports...)
	s.Labels = labels
	s.Spec.Type = corev1.ServiceTypeLoadBalancer
	s.Spec.ExternalIPs = externalIPs
	s.Status.LoadBalancer.Ingress = ingress
	return s
}

// Gateways from Services: the network label, port 15443 unless the
// gatewayPort label says another, the HBONE port when declared, addresses
// from the load balancer status then externalIPs; a Service meshNetworks
// names as registryServiceName of this cluster's network.
func TestNetworkGatewaysFromServices(t *testing.T) {
	nw := map[string]string{model.NetworkLabel: "network2"}
	f := newFixture(t, registry.Options{ClusterID: "cluster2", MeshNetworks: meshNetworks(map[string]*meshconfig.Network{
		"network3": {Endpoints: []*meshconfig.Network_NetworkEndpoints{fromRegistry("cluster2")},
			Gateways: []*meshconfig.Network_IstioNetworkGateway{{Port: 443,
				Gw: &meshconfig.Network_IstioNetworkGateway_RegistryServiceName{RegistryServiceName: "named-gw.istio-system.svc.cluster.local"}}}},
	})},
		gatewayService("eastwest", nw, []corev1.ServicePort{port("tls", 15443), port("hbone", 15008)},
			[]corev1.LoadBalancerIngress{{IP: "35.0.0.1"}, {Hostname: "gw.example.com"}}, "35.0.0.9"),
		gatewayService("custom-port", map[string]string{model.NetworkLabel: "network2", model.GatewayPortLabel: "16443"},
			[]corev1.ServicePort{port("tls", 16443)}, []corev1.LoadBalancerIngress{{IP: "35.0.0.2"}}),
		gatewayService("no-port", nw, []corev1.ServicePort{port("http", 80)}, []corev1.LoadBalancerIngress{{IP: "35.0.0.3"}}),
		gatewayService("no-address", nw, []corev1.ServicePort{port("tls", 15443)}, nil),
		gatewayService("named-gw", nil, []corev1.ServicePort{port("tls", 443)}, []corev1.LoadBalancerIngress{{IP: "35.0.0.4"}}),
	)
	want := []model.NetworkGateway{
		{Network: "network2", Cluster: "cluster2", Addr: "35.0.0.1", Port: 15443, HBONEPort: 15008},
		{Network: "network2", Cluster: "cluster2", Addr: "35.0.0.2", Port: 16443},
		{Network: "network3", Cluster: "cluster2", Addr: "35.0.0.4", Port: 443},
		{Network: "network2", Cluster: "cluster2", Addr: "35.0.0.9", Port: 15443, HBONEPort: 15008},
		{Network: "network2", Cluster: "cluster2", Addr: "gw.example.com", Port: 15443, HBONEPort: 15008},
	}
	f.eventually("gateways", func() bool { return slices.Equal(f.reg.NetworkGateways(), want) })

	// a gateway change is a forced push
	seq := f.rec.Seq()
	f.update(gatewayService("custom-port", map[string]string{model.NetworkLabel: "network2", model.GatewayPortLabel: "16443"},
		[]corev1.ServicePort{port("tls", 16443)}, []corev1.LoadBalancerIngress{{IP: "35.0.0.5"}}))
	f.wait(f.rec, seq, "forced push", func(e model.XDSEvent) bool {
		return e.Type == model.XDSEventConfig && e.Push.Forced && e.Push.Reason.Has(model.NetworksTrigger)
	})
	f.eventually("moved gateway", func() bool {
		return slices.ContainsFunc(f.reg.NetworkGateways(), func(g model.NetworkGateway) bool { return g.Addr == "35.0.0.5" })
	})
}
