package differential_test

import (
	"context"
	"encoding/base64"
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/tests/differential"
)

// Network gateways in ambient mode (Istio's defaults: no
// AMBIENT_ENABLE_MULTI_NETWORK), what ztunnel is sent: Gateways of class
// istio-remote labelled with their network (the status addresses each
// control plane writes, an IP and a hostname), one unlabelled and one of
// class istio-east-west (neither counts in the cluster istiod runs in), a
// Service labelled with a network (a gateway for Envoy proxies only);
// WorkloadEntries and a ServiceEntry endpoint of the gateways' networks
// and of a network without one, a redirected pod of the cluster. Every
// Address both send is compared: the gateways' own workloads and every
// workload's network_gateway.
func TestZtunnelNetworkGatewaysMatchIstio(t *testing.T) {
	const ns = "ztnet"
	c := differential.Case{
		Name: "ztunnel network gateways",
		Env:  []string{"PILOT_ENABLE_AMBIENT=true"},
		Objects: `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `, labels: {istio.io/dataplane-mode: ambient}}
---
apiVersion: v1
kind: Pod
metadata: {name: api-6b7c8-aaaaa, namespace: ` + ns + `, labels: {app: api}, annotations: {ambient.istio.io/redirection: enabled}}
spec: {containers: [{name: app, image: app}]}
status: {podIP: 10.244.93.1}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: ` + ns + `}
spec: {clusterIP: 10.0.0.231, selector: {app: api}, ports: [{name: http, port: 8080, targetPort: 8080}]}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: api-nw2, namespace: ` + ns + `}
spec: {address: 10.93.2.1, network: nw2, labels: {app: api}, serviceAccount: api}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: api-nw3, namespace: ` + ns + `}
spec: {address: 10.93.3.1, network: nw3, labels: {app: api}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: api-nw4, namespace: ` + ns + `}
spec: {address: 10.93.4.1, network: nw4, labels: {app: api}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: billing, namespace: ` + ns + `}
spec:
  hosts: [billing.example.internal]
  addresses: [240.240.0.31]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.93.2.7, network: nw2}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: nw2-remote, namespace: ` + ns + `, labels: {topology.istio.io/network: nw2}}
spec:
  gatewayClassName: istio-remote
  addresses: [{type: IPAddress, value: 172.18.93.2}]
  listeners: [{name: cross-network, port: 15008, protocol: HBONE}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: nw4-remote, namespace: ` + ns + `, labels: {topology.istio.io/network: nw4}, annotations: {gateway.istio.io/service-account: eastwest}}
spec:
  gatewayClassName: istio-remote
  addresses: [{type: Hostname, value: eastwest.nw4.example.com}]
  listeners: [{name: cross-network, port: 15009, protocol: HBONE}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: unlabelled-remote, namespace: ` + ns + `}
spec:
  gatewayClassName: istio-remote
  addresses: [{type: IPAddress, value: 172.18.93.5}]
  listeners: [{name: cross-network, port: 15008, protocol: HBONE}]
---
# a labelled Service: a gateway of nw6 for the Envoy proxies, not for
# ztunnel (one gateway per network in these cases: Istio keeps a stale
# copy of the gateways for DNS clusters, and a network of two would scale
# the weights of the next cases' DNS clusters in Istio's world)
apiVersion: v1
kind: Service
metadata: {name: nw6-gateway, namespace: ` + ns + `, labels: {topology.istio.io/network: nw6}}
spec: {clusterIP: 10.0.0.232, selector: {app: nw6-gateway}, externalIPs: [172.18.93.6], ports: [{name: tls, port: 15443, targetPort: 15443}, {name: tcp-hbone, port: 15008, targetPort: 15008}]}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: api-nw6, namespace: ` + ns + `}
spec: {address: 10.93.6.1, network: nw6, labels: {app: api}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: nw3-eastwest, namespace: ` + ns + `, labels: {topology.istio.io/network: nw3}}
spec:
  gatewayClassName: istio-east-west
  addresses: [{type: IPAddress, value: 172.18.93.3}]
  listeners: [{name: mesh, port: 15008, protocol: HBONE, tls: {mode: Terminate, options: {gateway.istio.io/tls-terminate-mode: ISTIO_MUTUAL}}}]
`,
		Proxy: differential.Proxy{Pod: "client-5d8f7-abcde", Namespace: ns, IP: "10.244.93.9", Labels: map[string]string{"app": "client"}},
	}
	ztunnel := differential.Proxy{Type: "ztunnel", Pod: "ztunnel-n3t9q", Namespace: "istio-system", IP: "10.244.93.100",
		Metadata: map[string]any{"NAME": "ztunnel-n3t9q", "NODE_NAME": "node-0"}}
	differential.Shared(t).With(t, c, func(w *differential.Worlds) {
		want := []string{
			"NetworkGateway/nw2/172.18.93.2/15008", "NetworkGateway/nw4/eastwest.nw4.example.com/15009",
			"Kubernetes/networking.istio.io/WorkloadEntry/" + ns + "/api-nw2",
			"Kubernetes/networking.istio.io/WorkloadEntry/" + ns + "/api-nw4",
			"Kubernetes/networking.istio.io/WorkloadEntry/" + ns + "/api-nw6",
			"Kubernetes/networking.istio.io/ServiceEntry/" + ns + "/billing/10.93.2.7",
			"Kubernetes//Pod/" + ns + "/api-6b7c8-aaaaa", ns + "/api." + ns + ".svc.cluster.local",
		}
		agree(t, w, agreement{
			what: "ztunnel's network gateways",
			get: func(ctx context.Context, fl differential.Flavor) (any, error) {
				return workloadAPIRenamed(ctx, w, fl, ztunnel, ns)
			},
			ready: func(v any) bool {
				m, _ := v.(map[string]any)
				for _, n := range want {
					if _, ok := m[n]; !ok {
						return false
					}
				}
				// the workloads are rebuilt once the gateways' status is written
				for _, n := range []string{want[2], want[3], want[5]} {
					wl, _ := m[n].(map[string]any)["workload"].(map[string]any)
					if _, ok := wl["network_gateway"]; !ok {
						return false
					}
				}
				return true
			},
		})
	})
}

// A waypoint whose service has endpoints on other networks, with Istio's
// defaults: the endpoints of a network with a gateway that take mTLS (a
// sidecar's pod, a WorkloadEntry) go through the gateway (an istio-remote
// Gateway's HBONE listener, a Service labelled with its network on
// 15443), those that do not (an ambient pod of another network) are
// dropped, those of a network without a gateway are sent as they are,
// and the waypoint's own network keeps its HBONE endpoints (one gateway
// per network: see TestZtunnelNetworkGatewaysMatchIstio). The waypoint's
// clusters, listeners and load assignments are compared, for a waypoint
// of network nw1 and for one that names no network (which reaches every
// endpoint of a network with gateways through them).
func TestWaypointEndpointsThroughGateways(t *testing.T) {
	for _, network := range []string{"nw1", ""} {
		t.Run("network="+network, func(t *testing.T) { waypointThroughGateways(t, network) })
	}
}

func waypointThroughGateways(t *testing.T, network string) {
	const ns = "wpnet"
	pod := func(name, ip, extraLabels, annotations string) string {
		return `
---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: ` + ns + `, labels: {app: cart` + extraLabels + `}` + annotations + `}
spec: {serviceAccountName: cart, containers: [{name: app, image: app}]}
status: {podIP: ` + ip + `}`
	}
	const redirected = `, annotations: {ambient.istio.io/redirection: enabled}`
	differential.Shared(t).Run(t, differential.Case{
		Name:  strings.TrimSpace("waypoint endpoints through gateways " + network),
		Env:   []string{"PILOT_ENABLE_AMBIENT=true"},
		Probe: true,
		Objects: `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `, labels: {istio.io/dataplane-mode: ambient}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: cart, namespace: ` + ns + `}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: cart-waypoint, namespace: ` + ns + `}` +
			pod("cart-local-6b7c8-aaaaa", "10.244.94.1", "", redirected) +
			pod("cart-nw2-6b7c8-bbbbb", "10.94.2.1", ", topology.istio.io/network: nw2, security.istio.io/tlsMode: istio", "") +
			pod("cart-nw2-6b7c8-ccccc", "10.94.2.2", ", topology.istio.io/network: nw2, security.istio.io/tlsMode: istio", "") +
			pod("cart-nw2-ambient-6b7c8-ddddd", "10.94.2.3", ", topology.istio.io/network: nw2", redirected) +
			pod("cart-nw3-6b7c8-eeeee", "10.94.3.1", ", topology.istio.io/network: nw3, security.istio.io/tlsMode: istio", "") + `
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: cart-nw5, namespace: ` + ns + `}
spec: {address: 10.94.5.1, network: nw5, labels: {app: cart, security.istio.io/tlsMode: istio}, serviceAccount: cart}
---
apiVersion: v1
kind: Pod
metadata: {name: cart-waypoint-5f6a7-fffff, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: cart-waypoint, istio.io/dataplane-mode: none, sidecar.istio.io/inject: "false"}}
spec: {serviceAccountName: cart-waypoint, containers: [{name: istio-proxy, image: proxyv2}]}
status: {podIP: 10.244.94.9}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: ` + ns + `, labels: {istio.io/use-waypoint: cart-waypoint}}
spec: {selector: {app: cart}, ports: [{name: http, port: 8080, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: cart-waypoint, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: cart-waypoint}}
spec: {selector: {gateway.networking.k8s.io/gateway-name: cart-waypoint}, ports: [{name: mesh, port: 15008, appProtocol: all}]}
---
apiVersion: v1
kind: Service
metadata: {name: nw5-gateway, namespace: ` + ns + `, labels: {topology.istio.io/network: nw5}}
spec: {selector: {app: nw5-gateway}, externalIPs: [172.18.94.5], ports: [{name: tls, port: 15443, targetPort: 15443}]}

---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: cart-waypoint, namespace: ` + ns + `, labels: {istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: nw2-remote, namespace: ` + ns + `, labels: {topology.istio.io/network: nw2}}
spec:
  gatewayClassName: istio-remote
  addresses: [{type: IPAddress, value: 172.18.94.2}]
  listeners: [{name: cross-network, port: 15008, protocol: HBONE}]
`,
		Proxy: differential.Proxy{Type: "waypoint", Pod: "cart-waypoint-5f6a7-fffff", Namespace: ns,
			Labels:   map[string]string{"gateway.networking.k8s.io/gateway-name": "cart-waypoint"},
			Metadata: map[string]any{"NETWORK": network}},
		Allowed: []differential.Allowed{{
			Name: "waypoint-peer-trace-tags", Type: "lds", Resource: "main_internal", Path: "filterChains[*].filters[*].typedConfig.tracing.customTags",
			Why: "Istio adds 18 istio.source_*/istio.destination_* tags whose value is CustomTag.value, a field the " +
				"go-control-plane of this module lacks (a tag without one fails Envoy's validation); the same allowance as " +
				"TestWaypointTwoServices",
		}},
	})
}

// workloadAPIRenamed is workloadAPI with the cluster IPs of the Services
// of ns named after their Service (each API server assigns its own).
func workloadAPIRenamed(ctx context.Context, w *differential.Worlds, fl differential.Flavor, ztunnel differential.Proxy, ns string) (any, error) {
	got, err := workloadAPI(ctx, w.GRPC(fl), ztunnel, ns, fl == differential.Istio)
	if err != nil {
		return nil, err
	}
	svcs, err := w.Kube(fl).Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, s := range svcs.Items {
		if ip, err := netip.ParseAddr(s.Spec.ClusterIP); err == nil {
			names[base64.StdEncoding.EncodeToString(ip.AsSlice())] = "<clusterIP " + ns + "/" + s.Name + ">"
		}
	}
	return renameValues(got, names), nil
}

// A DNS ServiceEntry that uses a waypoint (an egress waypoint), with
// endpoints of three networks: its inbound-vip cluster carries them
// inline, as Istio's endpoint builder gives them to a proxy that is not a
// sidecar: the endpoint of the network with a gateway through it, the
// others as they are. The waypoint's clusters, listeners and load
// assignments are compared; Istio's DNS clusters use a stale copy of the
// gateways (see the allowance).
func TestWaypointDNSEndpointsThroughGateways(t *testing.T) {
	const ns = "wpdnsnet"
	differential.Shared(t).Run(t, differential.Case{
		Name:  "waypoint dns endpoints through gateways",
		Env:   []string{"PILOT_ENABLE_AMBIENT=true"},
		Probe: true,
		Objects: `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `, labels: {istio.io/dataplane-mode: ambient}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: egress-waypoint, namespace: ` + ns + `}
---
apiVersion: v1
kind: Pod
metadata: {name: egress-waypoint-5f6a7-aaaaa, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: egress-waypoint, istio.io/dataplane-mode: none, sidecar.istio.io/inject: "false"}}
spec: {serviceAccountName: egress-waypoint, containers: [{name: istio-proxy, image: proxyv2}]}
status: {podIP: 10.244.95.9}
---
apiVersion: v1
kind: Service
metadata: {name: egress-waypoint, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: egress-waypoint}}
spec: {selector: {gateway.networking.k8s.io/gateway-name: egress-waypoint}, ports: [{name: mesh, port: 15008, appProtocol: all}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress-waypoint, namespace: ` + ns + `, labels: {istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
---
apiVersion: v1
kind: Service
metadata: {name: nw2-gateway, namespace: ` + ns + `, labels: {topology.istio.io/network: nw2}}
spec: {selector: {app: nw2-gateway}, externalIPs: [172.18.95.2], ports: [{name: tls, port: 15443, targetPort: 15443}]}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: stock, namespace: ` + ns + `, labels: {istio.io/use-waypoint: egress-waypoint}}
spec:
  hosts: [stock.ext.example]
  # an address of its own: the allocators of the two control planes give
  # addresses in the order they saw ServiceEntries, other cases' included
  addresses: [240.240.95.1]
  location: MESH_INTERNAL
  resolution: DNS
  ports: [{number: 9000, name: tcp-stock, protocol: TCP}]
  endpoints:
  - {address: stock.nw2.example, network: nw2, serviceAccount: stock}
  - {address: stock.nw3.example, network: nw3, serviceAccount: stock}
  - {address: stock.local.example}
`,
		Proxy: differential.Proxy{Type: "waypoint", Pod: "egress-waypoint-5f6a7-aaaaa", Namespace: ns,
			Labels:   map[string]string{"gateway.networking.k8s.io/gateway-name": "egress-waypoint"},
			Metadata: map[string]any{"NETWORK": "nw1"}},
		Allowed: []differential.Allowed{{
			Name: "waypoint-peer-trace-tags", Type: "lds", Resource: "main_internal", Path: "filterChains[*].filters[*].typedConfig.tracing.customTags",
			Why: "as in TestWaypointTwoServices: CustomTag.value is missing from this module's go-control-plane",
		}, {
			// Istio's NetworkManager.reload ends with
			// `NetworkGateways.update(resolved) || Unresolved.update(all)`:
			// when the resolved gateways change, the unresolved ones (which
			// its endpoint builder uses for DNS clusters) are not updated, so
			// they lag behind (none, or the gateways of Gateways an earlier
			// case deleted, depending on what ran before)
			Name: "istio-stale-unresolved-gateways", Type: "cds", Resource: "inbound-vip|9000|tcp|stock.ext.example",
			Path: "loadAssignment.endpoints", Intermittent: true,
			Why: "Istio's DNS clusters use gateways its reload leaves stale whenever the resolved ones change " +
				"(a short-circuited ||); ours uses the current ones (docs/differences.md)",
		}},
	})
}
