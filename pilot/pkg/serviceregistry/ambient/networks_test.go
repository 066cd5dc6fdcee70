package ambient_test

import (
	"net/netip"
	"testing"

	"google.golang.org/protobuf/proto"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/workloadapi"
)

// networkObjects: a pod of the cluster (network nw1), a WorkloadEntry and
// a ServiceEntry endpoint of network nw2, one of nw3 (no gateway), and the
// Gateways: an istio-remote one for nw2 (an IP and a hostname), an
// unlabelled one, an istio-east-west one (remote clusters only) and one
// of another class.
const networkObjects = `
apiVersion: v1
kind: Namespace
metadata: {name: istio-system, labels: {topology.istio.io/network: nw1}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: cart-1, namespace: shop, labels: {app: cart}}
spec: {serviceAccountName: cart, containers: [{name: app, image: app}]}
status: {podIP: 10.244.1.1, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-nw2, namespace: shop}
spec: {address: 10.20.0.5, network: nw2, labels: {app: vm}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-nw3, namespace: shop}
spec: {address: 10.30.0.5, network: nw3}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ext, namespace: shop}
spec:
  hosts: [ext.example.com]
  addresses: [240.0.0.1]
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.20.0.6, network: nw2}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: nw2-remote, namespace: istio-system, labels: {topology.istio.io/network: nw2}}
spec:
  gatewayClassName: istio-remote
  addresses: [{type: IPAddress, value: 172.18.0.10}, {type: Hostname, value: ew.nw2.example.com}]
  listeners: [{name: cross-network, port: 15008, protocol: HBONE, tls: {mode: Passthrough}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: unlabelled, namespace: istio-system}
spec:
  gatewayClassName: istio-remote
  addresses: [{type: IPAddress, value: 172.18.0.11}]
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: eastwest, namespace: istio-system, labels: {topology.istio.io/network: nw3}}
spec:
  gatewayClassName: istio-east-west
  addresses: [{type: IPAddress, value: 172.18.0.12}]
  listeners: [{name: mesh, port: 15008, protocol: HBONE, tls: {mode: Terminate}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ingress, namespace: istio-system, labels: {topology.istio.io/network: nw3}}
spec:
  gatewayClassName: istio
  addresses: [{type: IPAddress, value: 172.18.0.13}]
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
`

// withRemoteStatus gives every Gateway the status Istio writes for
// istio-remote ones: its spec addresses.
func withRemoteStatus(objs []any) []any {
	for i, o := range objs {
		c, ok := o.(config.Config)
		if !ok || c.GroupVersionKind != gvk.KubernetesGateway {
			continue
		}
		spec := c.Spec.(*gatewayv1.GatewaySpec)
		st := &gatewayv1.GatewayStatus{}
		for _, a := range spec.Addresses {
			st.Addresses = append(st.Addresses, gatewayv1.GatewayStatusAddress(a))
		}
		c.Status = st
		objs[i] = c
	}
	return objs
}

func ipBytes(s string) []byte { return netip.MustParseAddr(s).AsSlice() }

func TestNetworkGatewayWorkloads(t *testing.T) {
	m := newMesh(withRemoteStatus(parseObjects(t, networkObjects)))
	x := m.index(t)
	ip := "NetworkGateway/nw2/172.18.0.10/15008"
	host := "NetworkGateway/nw2/ew.nw2.example.com/15008"
	eventually(t, "gateway workloads", func() bool { return workload(x, ip) != nil && workload(x, host) != nil })
	want := &workloadapi.Workload{Uid: ip, Name: ip, Namespace: "istio-system", ServiceAccount: "nw2-remote-istio-remote",
		Network: "nw2", Addresses: [][]byte{ipBytes("172.18.0.10")}}
	if got := workload(x, ip); !proto.Equal(got, want) {
		t.Errorf("gateway workload:\n got %v\nwant %v", got, want)
	}
	if got := workload(x, host); got.GetHostname() != "ew.nw2.example.com" || len(got.GetAddresses()) != 0 {
		t.Errorf("hostname gateway workload: %v", got)
	}
	if a := x.Addresses().GetKey(ip); a == nil || len(a.IPs) != 1 || a.IPs[0] != "nw2/172.18.0.10" {
		t.Errorf("gateway address keys: %v", a)
	}
	for _, a := range x.Addresses().List() {
		w := a.Proto.GetWorkload()
		if w == nil || w.Uid == ip || w.Uid == host {
			continue
		}
		if len(w.Uid) > 15 && w.Uid[:15] == "NetworkGateway/" {
			t.Errorf("unexpected gateway workload %s (unlabelled, east-west in the local cluster, or another class)", w.Uid)
		}
	}
}

func TestNetworkGatewayOfWorkloads(t *testing.T) {
	m := newMesh(withRemoteStatus(parseObjects(t, networkObjects)))
	x := m.index(t)
	// the first gateway by key (".../nw2-remote/172.18.0.10" before
	// ".../nw2-remote/ew.nw2.example.com")
	want := &workloadapi.GatewayAddress{HboneMtlsPort: 15008, Destination: &workloadapi.GatewayAddress_Address{
		Address: &workloadapi.NetworkAddress{Network: "nw2", Address: ipBytes("172.18.0.10")}}}
	vm := "Kubernetes/networking.istio.io/WorkloadEntry/shop/vm-nw2"
	se := "Kubernetes/networking.istio.io/ServiceEntry/shop/ext/10.20.0.6"
	eventually(t, "network gateways of nw2 workloads", func() bool {
		return proto.Equal(workload(x, vm).GetNetworkGateway(), want) && proto.Equal(workload(x, se).GetNetworkGateway(), want)
	})
	if g := workload(x, "Kubernetes/networking.istio.io/WorkloadEntry/shop/vm-nw3").GetNetworkGateway(); g != nil {
		t.Errorf("nw3 has no istio-remote gateway (east-west ones count in remote clusters only), got %v", g)
	}
	if g := workload(x, "Kubernetes//Pod/shop/cart-1").GetNetworkGateway(); g != nil {
		t.Errorf("the cluster's network nw1 has no gateway, got %v", g)
	}

	// a gateway of the cluster's own network is every pod's gateway too, as
	// in Istio
	gw := cfg(m, gvk.KubernetesGateway, "istio-system", "unlabelled")
	gw.Labels = map[string]string{"topology.istio.io/network": "nw1"}
	gw.Annotations = map[string]string{"gateway.istio.io/service-account": "ew"}
	m.set(gw)
	local := &workloadapi.GatewayAddress{HboneMtlsPort: 15008, Destination: &workloadapi.GatewayAddress_Address{
		Address: &workloadapi.NetworkAddress{Network: "nw1", Address: ipBytes("172.18.0.11")}}}
	eventually(t, "the pod's gateway", func() bool {
		return proto.Equal(workload(x, "Kubernetes//Pod/shop/cart-1").GetNetworkGateway(), local) &&
			workload(x, "NetworkGateway/nw1/172.18.0.11/15008").GetServiceAccount() == "ew"
	})

	// the gateway's status loses its addresses: the workloads lose it
	gw2 := cfg(m, gvk.KubernetesGateway, "istio-system", "nw2-remote")
	gw2.Status = &gatewayv1.GatewayStatus{}
	m.set(gw2)
	eventually(t, "gateway gone", func() bool {
		return workload(x, vm) != nil && workload(x, vm).GetNetworkGateway() == nil &&
			workload(x, "NetworkGateway/nw2/172.18.0.10/15008") == nil
	})
}

// A hostname gateway is given by namespace and hostname.
func TestNetworkGatewayHostname(t *testing.T) {
	objs := withRemoteStatus(parseObjects(t, networkObjects))
	for i, o := range objs {
		if c, ok := o.(config.Config); ok && c.Name == "nw2-remote" {
			c.Status = &gatewayv1.GatewayStatus{Addresses: []gatewayv1.GatewayStatusAddress{
				{Type: ptrTo(gatewayv1.HostnameAddressType), Value: "ew.nw2.example.com"}}}
			objs[i] = c
		}
	}
	x := newMesh(objs).index(t)
	want := &workloadapi.GatewayAddress{HboneMtlsPort: 15008, Destination: &workloadapi.GatewayAddress_Hostname{
		Hostname: &workloadapi.NamespacedHostname{Namespace: "istio-system", Hostname: "ew.nw2.example.com"}}}
	eventually(t, "hostname gateway", func() bool {
		return proto.Equal(workload(x, "Kubernetes/networking.istio.io/WorkloadEntry/shop/vm-nw2").GetNetworkGateway(), want)
	})
}

func ptrTo[T any](v T) *T { return &v }

// A ServiceEntry endpoint without a network is on the cluster's network
// whatever the endpoints before it say (Istio carries an earlier
// endpoint's network over to the next ones: docs/differences.md).
func TestServiceEntryEndpointNetworks(t *testing.T) {
	objs := withRemoteStatus(parseObjects(t, networkObjects+`
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: mixed, namespace: shop}
spec:
  hosts: [mixed.example.com]
  addresses: [240.0.0.2]
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.20.0.8, network: nw2}, {address: 10.244.1.8}]
`))
	x := newMesh(objs).index(t)
	first := "Kubernetes/networking.istio.io/ServiceEntry/shop/mixed/10.20.0.8"
	second := "Kubernetes/networking.istio.io/ServiceEntry/shop/mixed/10.244.1.8"
	eventually(t, "mixed endpoints", func() bool {
		return workload(x, first).GetNetworkGateway() != nil && workload(x, second) != nil
	})
	if w := workload(x, second); w.GetNetwork() != "nw1" || w.GetNetworkGateway() != nil {
		t.Errorf("second endpoint: network %q gateway %v, want nw1 and none", w.GetNetwork(), w.GetNetworkGateway())
	}
}
