package differential_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshplane/istiod/tests/differential"
)

// The multicluster cases: in each world a primary (cluster ID
// Kubernetes) reads a remote, cluster2, from a remote secret, and a
// sidecar and a gateway of the primary are compared. Namespace mc-app
// holds, in both clusters, Service both (one pod in the primary, two in
// the remote) and Service local (a cluster-local host by the mesh
// config's serviceSettings); the remote alone has Service remote-only;
// kube-system holds Service mc-dns in both (cluster-local by default).
const mcNamespace = "mc-app"

// mcMesh marks Service local cluster-local, and every Service of
// namespace mc-remote-only (which only the remote has).
const mcMesh = `serviceSettings:
- settings: {clusterLocal: true}
  hosts: [local.` + mcNamespace + `.svc.cluster.local, "*.mc-remote-only.svc.cluster.local"]
`

// mcPod is a pod of ns with label app (and, in a multi-network mesh,
// security.istio.io/tlsMode: istio, as the injector labels them); more
// are more labels, spec more fields of its spec.
func mcPod(name, ns, app, ip string, mtls bool, more, spec string) string {
	labels := "app: " + app + more
	if mtls {
		labels += ", security.istio.io/tlsMode: istio"
	}
	return fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {%s}}
spec: {%scontainers: [{name: app, image: app, ports: [{containerPort: 8080}, {containerPort: 5432}]}]}
status: {podIP: %s}
`, name, ns, labels, spec, ip)
}

// mcNode is a Node of region1 and zone, for the pods of a cluster.
func mcNode(name, zone string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Node
metadata: {name: %s, labels: {topology.kubernetes.io/region: region1, topology.kubernetes.io/zone: %s}}
`, name, zone)
}

// mcService is a Service of ns selecting app; ip (the remote's, in
// differential.RemoteClusterIPs) is dropped in the primary.
func mcService(name, ns, ip, ports string) string {
	cip := ""
	if ip != "" {
		cip = "clusterIP: " + ip + ", "
	}
	return fmt.Sprintf(`---
apiVersion: v1
kind: Service
metadata: {name: %s, namespace: %s}
spec: {%sselector: {app: %s}, ports: [%s]}
`, name, ns, cip, name, ports)
}

const (
	mcHTTP = `{name: http, port: 80, targetPort: 8080}`
	mcGRPC = `{name: grpc, port: 9090, targetPort: 8080}`
	mcDNS  = `{name: tcp-dns, port: 53, targetPort: 8080}`
	mcDB   = `{name: tcp-db, port: 5432, targetPort: 5432}`
)

// mcRules: subsets of both by version, by cluster and by network (the
// labels Istio gives every endpoint), with outlier detection.
const mcRules = `---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: both, namespace: ` + mcNamespace + `}
spec:
  host: both.` + mcNamespace + `.svc.cluster.local
  trafficPolicy: {outlierDetection: {consecutive5xxErrors: 3, interval: 10s}}
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
  - {name: remote, labels: {topology.istio.io/cluster: ` + differential.RemoteClusterID + `}}
  - {name: network2, labels: {topology.istio.io/network: network2}}
`

// mcDNSEntries are two DNS ServiceEntries of the config cluster, with
// endpoints given by hostname, one without a network and one of
// network2 (mTLS): dns-local's host is cluster-local (mcMesh's wildcard),
// dns-global's is not. Their clusters carry the endpoints inline, under
// EDS's filter: a cluster-local host keeps the endpoints of the proxy's
// cluster (an entry's are the config cluster's), so a proxy of the
// remote gets no dns-local cluster at all; with gateways, the network2
// endpoints are still sent as they are (Istio's DNS clusters read its
// Unresolved gateways, which hold none here: pilot/pkg/networking/cluster
// inline.go).
const mcDNSEntries = `---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dns-local, namespace: ` + mcNamespace + `}
spec:
  hosts: [dns-local.mc-remote-only.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: DNS
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints:
  - {address: a.dns-local.example.com}
  - {address: b.dns-local.example.com, network: network2, labels: {security.istio.io/tlsMode: istio}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dns-global, namespace: ` + mcNamespace + `}
spec:
  hosts: [dns-global.example.com]
  location: MESH_INTERNAL
  resolution: DNS
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints:
  - {address: a.dns-global.example.com}
  - {address: b.dns-global.example.com, network: network2, labels: {security.istio.io/tlsMode: istio}}
`

// mcPrimary are the primary's objects: the client (whose sidecar is
// compared), an ingress gateway pod routing to both and remote-only,
// the primary's pods (on a Node of zone1) of both (version v1), local,
// headless db and kube-system/mc-dns, mcRules and mcDNSEntries.
func mcPrimary(mtls bool) string {
	node := "nodeName: mc-node-1, "
	return `apiVersion: v1
kind: Namespace
metadata: {name: ` + mcNamespace + `}
` + mcNode("mc-node-1", "zone1") +
		mcPod("client-5d8f7-abcde", mcNamespace, "client", "10.81.0.9", mtls, "", node) +
		mcPod("ingress-6c9d8-fghij", mcNamespace, "ingress", "10.81.0.8", false, "", node) +
		mcPod("both-7b8c9-local", mcNamespace, "both", "10.81.0.1", mtls, ", version: v1", node) +
		mcService("both", mcNamespace, "", mcHTTP) +
		mcPod("local-8c9d0-local", mcNamespace, "local", "10.81.0.3", mtls, "", node) +
		mcService("local", mcNamespace, "", mcHTTP) +
		mcPod("db-0", mcNamespace, "db", "10.81.0.5", mtls, "", node) +
		mcService("db", mcNamespace, "None", mcDB) +
		mcPod("mc-dns-9d0e1-local", "kube-system", "mc-dns", "10.81.0.4", mtls, "", node) +
		mcService("mc-dns", "kube-system", "", mcDNS) + mcRules + mcDNSEntries + `---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: ` + mcNamespace + `}
spec:
  selector: {app: ingress}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ingress, namespace: ` + mcNamespace + `}
spec:
  hosts: ["*"]
  gateways: [ingress]
  http:
  - match: [{uri: {prefix: /remote}}]
    route: [{destination: {host: remote-only.` + mcNamespace + `.svc.cluster.local}}]
  - match: [{uri: {prefix: /v2}}]
    route: [{destination: {host: both.` + mcNamespace + `.svc.cluster.local, subset: remote}}]
  - route: [{destination: {host: both.` + mcNamespace + `.svc.cluster.local}}]
`
}

// mcRemote are the remote's objects, on a Node of zone2: two pods of
// both (v2 with a service account of its own, v1) whose Service has a
// port more than the primary's, the pod of remote-only, and the remote's
// pods of local, headless db and kube-system/mc-dns, a client of its
// own (mcRemoteSidecar) and Service lonely of a namespace only it has;
// with gateways, that many east-west gateways of network2 in its
// istio-system (LoadBalancer Services labelled with the network, on port
// 15443, at 203.0.113.7, .8, ...).
func mcRemote(mtls bool, gateways int) string {
	var b strings.Builder
	b.WriteString(`apiVersion: v1
kind: Namespace
metadata: {name: ` + mcNamespace + `}
`)
	node := "nodeName: mc-node-2, "
	b.WriteString(`---
apiVersion: v1
kind: ServiceAccount
metadata: {name: remote-sa, namespace: ` + mcNamespace + `}
` + mcNode("mc-node-2", "zone2") +
		mcPod("both-7b8c9-remote1", mcNamespace, "both", "10.82.0.1", mtls, ", version: v2", node+"serviceAccountName: remote-sa, ") +
		mcPod("both-7b8c9-remote2", mcNamespace, "both", "10.82.0.2", mtls, ", version: v1", node) +
		mcService("both", mcNamespace, "10.0.0.6", mcHTTP+", "+mcGRPC) +
		mcPod("remote-only-1a2b3-remote", mcNamespace, "remote-only", "10.82.0.3", mtls, "", node) +
		mcService("remote-only", mcNamespace, "10.0.0.7", mcHTTP) +
		mcPod("local-8c9d0-remote", mcNamespace, "local", "10.82.0.4", mtls, "", node) +
		mcService("local", mcNamespace, "10.0.0.8", mcHTTP) +
		mcPod("db-1", mcNamespace, "db", "10.82.0.6", mtls, "", node) +
		mcService("db", mcNamespace, "None", mcDB) +
		mcPod("mc-dns-9d0e1-remote", "kube-system", "mc-dns", "10.82.0.5", mtls, "", node) +
		mcService("mc-dns", "kube-system", "10.0.0.9", mcDNS) +
		mcPod("client-5d8f7-remote", mcNamespace, "client", "10.82.0.9", mtls, "", node) + `---
apiVersion: v1
kind: Namespace
metadata: {name: mc-remote-only}
` + mcPod("lonely-2b3c4-remote", "mc-remote-only", "lonely", "10.82.0.7", mtls, "", node) +
		mcService("lonely", "mc-remote-only", "10.0.0.12", mcHTTP))
	for i := range gateways {
		name := "istio-eastwestgateway"
		if i > 0 {
			name += fmt.Sprint("-", i+1)
		}
		b.WriteString(mcGateway(name, "network2", fmt.Sprintf("10.0.0.%d", 10+i), fmt.Sprintf("203.0.113.%d", 7+i)))
	}
	return b.String()
}

// mcGateway is an east-west gateway Service of network in istio-system:
// a LoadBalancer labelled with the network, on port 15443, at address
// (its cluster IP ip, "" in the primary).
func mcGateway(name, network, ip, address string) string {
	cip := ""
	if ip != "" {
		cip = "\n  clusterIP: " + ip
	}
	return fmt.Sprintf(`---
apiVersion: v1
kind: Service
metadata:
  name: %s
  namespace: istio-system
  labels: {%s: %s, istio: eastwestgateway}
spec:
  type: LoadBalancer
  allocateLoadBalancerNodePorts: false%s
  selector: {istio: eastwestgateway}
  ports: [{name: tls, port: 15443, targetPort: 15443}]
status:
  loadBalancer: {ingress: [{ip: %s}]}
`, name, differential.NetworkLabel, network, cip, address)
}

// mcSidecar is the client's sidecar; network, when set, is its NETWORK
// metadata (the injector's, from values.global.network).
func mcSidecar(network string) differential.Proxy {
	p := differential.Proxy{Pod: "client-5d8f7-abcde", Namespace: mcNamespace}
	if network != "" {
		p.Metadata = map[string]any{"NETWORK": network}
	}
	return p
}

// mcRemoteSidecar is the sidecar of the remote's client, connected to
// the primary's control plane (CLUSTER_ID cluster2).
func mcRemoteSidecar(network string, mtls bool) differential.Proxy {
	p := mcSidecar(network)
	p.Pod, p.IP, p.ClusterID = "client-5d8f7-remote", "10.82.0.9", differential.RemoteClusterID
	p.Labels = map[string]string{"app": "client"}
	if mtls {
		p.Labels["security.istio.io/tlsMode"] = "istio"
	}
	return p
}

// mcRouter is the ingress gateway.
func mcRouter(network string) differential.Proxy {
	p := mcSidecar(network)
	p.Type, p.Pod = "router", "ingress-6c9d8-fghij"
	return p
}

// One network: a sidecar and the gateway of the primary get both's
// endpoints of both clusters, remote-only's and lonely's of the remote,
// and local's and mc-dns's of their own cluster only (a sidecar of the
// remote, connected to the primary's control plane, those of the
// remote); then the primary's sidecar with the remote secret rotated,
// and with it deleted (the remote's services and endpoints gone).
func TestMulticlusterSameNetwork(t *testing.T) {
	f := differential.Shared(t)
	m := differential.Multicluster{Mesh: mcMesh, Remote: mcRemote(false, 0)}
	f.Multicluster(t, m, func(c *differential.Clusters) {
		t.Run("sidecar", func(t *testing.T) {
			c.Run(t, differential.Case{Name: "multicluster sidecar", Objects: mcPrimary(false), Proxy: mcSidecar("")})
		})
		t.Run("gateway", func(t *testing.T) {
			c.Run(t, differential.Case{Name: "multicluster gateway", Objects: mcPrimary(false), Proxy: mcRouter("")})
		})
		t.Run("remote sidecar", func(t *testing.T) {
			c.Run(t, differential.Case{Name: "multicluster remote sidecar", Objects: mcPrimary(false), Proxy: mcRemoteSidecar("", false)})
		})
		t.Run("secret rotated", func(t *testing.T) {
			c.RotateSecret(t)
			c.Run(t, differential.Case{Name: "multicluster rotated", Objects: mcPrimary(false), Proxy: mcSidecar("")})
		})
		t.Run("secret deleted", func(t *testing.T) {
			c.DeleteSecret(t)
			c.Run(t, differential.Case{Name: "multicluster deleted", Objects: mcPrimary(false), Proxy: mcSidecar("")})
		})
	})
}

// Two networks, network1 (the primary) and network2 (the remote): with
// one east-west gateway in the remote, then with two there and one in
// the primary. A sidecar and a gateway of network1 reach the remote's
// pods through network2's gateways, at port 15443, weighted by the pods
// behind them; a sidecar of the remote (network2) reaches the primary's
// pods directly while network1 has no gateway, through its gateway once
// it has one; a sidecar that names no network is compared too.
func TestMulticlusterNetworks(t *testing.T) {
	f := differential.Shared(t)
	for _, gateways := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d gateways", gateways), func(t *testing.T) {
			m := differential.Multicluster{Mesh: mcMesh, Remote: mcRemote(true, gateways), PrimaryNetwork: "network1", RemoteNetwork: "network2"}
			f.Multicluster(t, m, func(c *differential.Clusters) {
				name := fmt.Sprintf("multinetwork %d", gateways)
				objects := mcPrimary(true)
				if gateways > 1 {
					objects += mcGateway("istio-eastwestgateway", "network1", "", "203.0.113.9")
				}
				t.Run("sidecar", func(t *testing.T) {
					c.Run(t, differential.Case{Name: name + " sidecar", Objects: objects, Proxy: mcSidecar("network1")})
				})
				t.Run("gateway", func(t *testing.T) {
					c.Run(t, differential.Case{Name: name + " gateway", Objects: objects, Proxy: mcRouter("network1")})
				})
				t.Run("remote sidecar", func(t *testing.T) {
					c.Run(t, differential.Case{Name: name + " remote sidecar", Objects: objects, Proxy: mcRemoteSidecar("network2", true)})
				})
				t.Run("sidecar without network", func(t *testing.T) {
					c.Run(t, differential.Case{Name: name + " no network", Objects: objects, Proxy: mcSidecar("")})
				})
			})
		})
	}
}
