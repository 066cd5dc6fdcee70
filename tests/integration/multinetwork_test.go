package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// Two clusters on two networks, as Istio's multi-primary multi-network
// install sets them up: each cluster's network is the
// topology.istio.io/network label of istiod's namespace in that cluster,
// and cluster2 has an east-west gateway Service labelled with its network
// on port 15443 with a load balancer address. A sidecar of network1 gets
// cluster1's endpoint as it is and, instead of cluster2's pod IP, the
// gateway's address on 15443, weighted by the endpoints behind it; a
// sidecar of network2 gets cluster2's pod directly (and cluster1's, whose
// network has no gateway, as Istio sends it). /debug/networkz lists the
// gateway; when the remote cluster goes, so does its gateway.
func TestMultiNetworkEastWestGateway(t *testing.T) {
	local := kube.Shared(t)
	remote := kube.Start(t)
	const network = "topology.istio.io/network"
	sys := local.NewNamespace(t, map[string]string{network: "network1"}).Name
	remote.CreateNamespace(t, sys, map[string]string{network: "network2"})
	ns := local.NewNamespace(t, nil).Name
	remote.CreateNamespace(t, ns, nil)
	ctx := context.Background()

	mtls := map[string]string{"app": "both", "security.istio.io/tlsMode": "istio"}
	service := func(env *kube.Env, ip string, pods ...string) {
		t.Helper()
		for i, p := range pods {
			runningPod(t, env, ns, p, ipPlus(ip, i), "default", mtls)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "both"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if _, err := env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		byIP := map[string]string{}
		for i, p := range pods {
			byIP[ipPlus(ip, i)] = p
		}
		if _, err := env.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, endpointSlice(ns, "both-abc", "both", byIP), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	service(local, "10.81.0.1", "both-local")
	service(remote, "10.82.0.1", "both-remote-a", "both-remote-b")

	// the east-west gateway of network2, in cluster2's istiod namespace
	gw := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-eastwestgateway", Namespace: sys,
		Labels: map[string]string{network: "network2", "istio": "eastwestgateway"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"istio": "eastwestgateway"},
			Ports: []corev1.ServicePort{{Name: "tls", Port: 15443, TargetPort: intstr.FromInt32(15443)}}}}
	created, err := remote.Kube.CoreV1().Services(sys).Create(ctx, gw, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
	if _, err := remote.Kube.CoreV1().Services(sys).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	d := startIstiod(t, local, sys, func(a *bootstrap.PilotArgs) { a.ClusterID = "cluster1" })
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "istio-remote-secret-cluster2", Namespace: sys,
		Labels:      map[string]string{"istio/multiCluster": "true"},
		Annotations: map[string]string{"networking.istio.io/cluster": "cluster2"}},
		Data: map[string][]byte{"cluster2": embeddedKubeconfig(t, remote.RESTConfig, "cluster2")}}
	if _, err := local.Kube.CoreV1().Secrets(sys).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	both := "outbound|80||both." + ns + ".svc.cluster.local"
	endpointsAre := func(what, proxyNetwork string, want []string) {
		t.Helper()
		proxy := adsc.Config{NodeID: "sidecar~10.81.0.9~client." + ns + "~" + ns + ".svc.cluster.local",
			Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "cluster1", "NETWORK": proxyNetwork, "ISTIO_VERSION": "1.31.0"}}
		eventually(t, what, func() (bool, string) {
			snap, err := adsc.Fetch(ctx, d.srv.GRPCAddr(), proxy)
			if err != nil {
				return false, err.Error()
			}
			cla, _ := snap["eds"][both].(*endpointv3.ClusterLoadAssignment)
			var got []string
			for _, l := range cla.GetEndpoints() {
				for _, e := range l.LbEndpoints {
					sa := e.GetEndpoint().GetAddress().GetSocketAddress()
					md := e.GetMetadata().GetFilterMetadata()
					got = append(got, fmt.Sprintf("%s:%d w%d %s %s", sa.GetAddress(), sa.GetPortValue(), e.GetLoadBalancingWeight().GetValue(),
						md["envoy.transport_socket_match"].GetFields()["tlsMode"].GetStringValue(),
						md["istio"].GetFields()["workload"].GetStringValue()))
				}
			}
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("got %q, want %q", got, want)
		})
	}
	// two endpoints behind the one gateway: weight 2, Istio's metadata
	// (TLS mode istio, the gateway's cluster)
	endpointsAre("network1: local pod and the gateway", "network1", []string{
		"10.81.0.1:8080 w1 istio both-local;" + ns + ";both;;cluster1",
		"203.0.113.7:15443 w2 istio ;;;;cluster2",
	})
	endpointsAre("network2: every pod directly", "network2", []string{
		"10.81.0.1:8080 w1 istio both-local;" + ns + ";both;;cluster1",
		"10.82.0.1:8080 w1 istio both-remote-a;" + ns + ";both;;cluster2",
		"10.82.0.2:8080 w1 istio both-remote-b;" + ns + ";both;;cluster2",
	})
	eventually(t, "networkz", func() (bool, string) {
		_, body := d.get("/debug/networkz")
		var got []map[string]any
		_ = json.Unmarshal(body, &got)
		return len(got) == 1 && got[0]["Network"] == "network2" && got[0]["Cluster"] == "cluster2" &&
			got[0]["Addr"] == "203.0.113.7" && got[0]["Port"] == float64(15443), string(body)
	})

	// the gateway's address changes: the sidecars follow
	cur, err := remote.Kube.CoreV1().Services(sys).Get(ctx, gw.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.8"}}
	if _, err := remote.Kube.CoreV1().Services(sys).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("network1: the moved gateway", "network1", []string{
		"10.81.0.1:8080 w1 istio both-local;" + ns + ";both;;cluster1",
		"203.0.113.8:15443 w2 istio ;;;;cluster2",
	})

	// the remote cluster goes: its endpoints and its gateway with it
	if err := local.Kube.CoreV1().Secrets(sys).Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("network1: the local cluster alone", "network1", []string{"10.81.0.1:8080 w1 istio both-local;" + ns + ";both;;cluster1"})
	eventually(t, "networkz empty", func() (bool, string) {
		_, body := d.get("/debug/networkz")
		var got []map[string]any
		return json.Unmarshal(body, &got) == nil && len(got) == 0, string(body)
	})
}

// A meshNetworks change derives the endpoints' networks again and adds its
// gateways, as Istio reloads: an endpoint first without a network is sent
// as it is; once meshNetworks puts its CIDR in net-b, whose gateway it
// gives by address, a sidecar of net-a gets that gateway instead.
func TestMeshNetworksReload(t *testing.T) {
	env := kube.Shared(t)
	sys := env.NewNamespace(t, nil).Name
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	runningPod(t, env, ns, "cidr-pod", "10.84.0.1", "default", map[string]string{"app": "cidr", "security.istio.io/tlsMode": "istio"})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cidr", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "cidr"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx,
		endpointSlice(ns, "cidr-abc", "cidr", map[string]string{"10.84.0.1": "cidr-pod"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	networksFile := filepath.Join(t.TempDir(), "meshNetworks")
	writeFile(t, networksFile, "networks: {}\n")
	d := startIstiod(t, env, sys, func(a *bootstrap.PilotArgs) { a.NetworksConfigFile = networksFile })
	proxy := adsc.Config{NodeID: "sidecar~10.81.0.9~client." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "NETWORK": "net-a", "ISTIO_VERSION": "1.31.0"}}
	name := "outbound|80||cidr." + ns + ".svc.cluster.local"
	endpointsAre := func(what string, want ...string) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			snap, err := adsc.Fetch(ctx, d.srv.GRPCAddr(), proxy)
			if err != nil {
				return false, err.Error()
			}
			cla, _ := snap["eds"][name].(*endpointv3.ClusterLoadAssignment)
			var got []string
			for _, l := range cla.GetEndpoints() {
				for _, e := range l.LbEndpoints {
					sa := e.GetEndpoint().GetAddress().GetSocketAddress()
					got = append(got, fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()))
				}
			}
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("got %q, want %q", got, want)
		})
	}
	endpointsAre("no network: direct", "10.84.0.1:8080")
	writeFile(t, networksFile, `networks:
  net-b:
    endpoints:
    - fromCidr: 10.84.0.0/16
    gateways:
    - address: 198.51.100.1
      port: 15443
`)
	endpointsAre("net-b through its gateway", "198.51.100.1:15443")
	eventually(t, "networkz", func() (bool, string) {
		_, body := d.get("/debug/networkz")
		var got []map[string]any
		_ = json.Unmarshal(body, &got)
		return len(got) == 1 && got[0]["Network"] == "net-b" && got[0]["Cluster"] == "" && got[0]["Addr"] == "198.51.100.1", string(body)
	})
}

// The other kinds of network gateway Istio finds, in a remote cluster
// (cluster2, network2) whose pod a sidecar of network1 reaches through
// them: a Gateway API Gateway labelled with the network (its
// spec.addresses on its auto-passthrough listener), then also a NodePort
// gateway Service annotated traffic.istio.io/nodeSelector (the selected
// node's ExternalIP on the node port, following the node), then also a
// load balancer that reports a hostname, resolved by istiod.
func TestMultiNetworkGatewayKinds(t *testing.T) {
	local := kube.Shared(t)
	remote := kube.Start(t)
	const network = "topology.istio.io/network"
	sys := local.NewNamespace(t, map[string]string{network: "network1"}).Name
	remote.CreateNamespace(t, sys, map[string]string{network: "network2"})
	ns := local.NewNamespace(t, nil).Name
	remote.CreateNamespace(t, ns, nil)
	ctx := context.Background()

	mtls := map[string]string{"app": "kinds", "security.istio.io/tlsMode": "istio"}
	for _, c := range []struct {
		env *kube.Env
		pod string
		ip  string
	}{{local, "kinds-local", "10.85.0.1"}, {remote, "kinds-remote", "10.86.0.1"}} {
		runningPod(t, c.env, ns, c.pod, c.ip, "default", mtls)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kinds", Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "kinds"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if _, err := c.env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.env.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx,
			endpointSlice(ns, "kinds-abc", "kinds", map[string]string{c.ip: c.pod}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// a Gateway API east-west gateway of network2
	ipType := gatewayv1.IPAddressType
	passthrough := gatewayv1.TLSModePassthrough
	gwapi := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "eastwest", Namespace: sys, Labels: map[string]string{network: "network2"}},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "istio",
			Addresses: []gatewayv1.GatewaySpecAddress{{Type: &ipType, Value: "203.0.113.20"}},
			Listeners: []gatewayv1.Listener{{Name: "tls", Port: 15443, Protocol: gatewayv1.TLSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: &passthrough}}}}}
	if _, err := remote.GatewayAPI.GatewayV1().Gateways(sys).Create(ctx, gwapi, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	d := startIstiod(t, local, sys, func(a *bootstrap.PilotArgs) { a.ClusterID = "cluster1" })
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "istio-remote-secret-cluster2", Namespace: sys,
		Labels:      map[string]string{"istio/multiCluster": "true"},
		Annotations: map[string]string{"networking.istio.io/cluster": "cluster2"}},
		Data: map[string][]byte{"cluster2": embeddedKubeconfig(t, remote.RESTConfig, "cluster2")}}
	if _, err := local.Kube.CoreV1().Secrets(sys).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cluster := "outbound|80||kinds." + ns + ".svc.cluster.local"
	proxy := adsc.Config{NodeID: "sidecar~10.85.0.9~client." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "cluster1", "NETWORK": "network1", "ISTIO_VERSION": "1.31.0"}}
	endpoints := func() ([]string, error) {
		snap, err := adsc.Fetch(ctx, d.srv.GRPCAddr(), proxy)
		if err != nil {
			return nil, err
		}
		cla, _ := snap["eds"][cluster].(*endpointv3.ClusterLoadAssignment)
		var got []string
		for _, l := range cla.GetEndpoints() {
			for _, e := range l.LbEndpoints {
				sa := e.GetEndpoint().GetAddress().GetSocketAddress()
				got = append(got, fmt.Sprintf("%s:%d w%d", sa.GetAddress(), sa.GetPortValue(), e.GetLoadBalancingWeight().GetValue()))
			}
		}
		return got, nil
	}
	endpointsAre := func(what string, want ...string) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			got, err := endpoints()
			if err != nil {
				return false, err.Error()
			}
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("got %q, want %q", got, want)
		})
	}
	endpointsAre("the Gateway API gateway", "10.85.0.1:8080 w1", "203.0.113.20:15443 w1")

	// a NodePort gateway: the selected node's ExternalIP, on the node port
	nodePort := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "eastwest-nodeport", Namespace: sys,
		Labels:      map[string]string{network: "network2"},
		Annotations: map[string]string{"traffic.istio.io/nodeSelector": `{"istio-gateway":"yes"}`}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"istio": "eastwestgateway"},
			Ports: []corev1.ServicePort{{Name: "tls", Port: 15443, TargetPort: intstr.FromInt32(15443), NodePort: 31443}}}}
	if _, err := remote.Kube.CoreV1().Services(sys).Create(ctx, nodePort, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setNode := func(name, externalIP string, labels map[string]string) {
		t.Helper()
		n, err := remote.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			n, err = remote.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		n.Labels = labels
		if n, err = remote.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.86.1.1"},
			{Type: corev1.NodeExternalIP, Address: externalIP}}
		if _, err := remote.Kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setNode("gw-node", "198.51.100.30", map[string]string{"istio-gateway": "yes"})
	setNode("other-node", "198.51.100.40", map[string]string{"istio-gateway": "no"})
	// two gateways of network2 in cluster2: weights scaled by 2, split
	endpointsAre("the NodePort gateway too", "10.85.0.1:8080 w2", "198.51.100.30:31443 w1", "203.0.113.20:15443 w1")
	setNode("gw-node", "198.51.100.31", map[string]string{"istio-gateway": "yes"})
	endpointsAre("the node's new address", "10.85.0.1:8080 w2", "198.51.100.31:31443 w1", "203.0.113.20:15443 w1")
	setNode("gw-node", "198.51.100.31", map[string]string{"istio-gateway": "no"})
	endpointsAre("the node no longer selected", "10.85.0.1:8080 w1", "203.0.113.20:15443 w1")

	// a load balancer that reports a hostname: istiod resolves it
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "eastwest-elb", Namespace: sys, Labels: map[string]string{network: "network2"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"istio": "eastwestgateway"},
			Ports: []corev1.ServicePort{{Name: "tls", Port: 15443, TargetPort: intstr.FromInt32(15443)}}}}
	created, err := remote.Kube.CoreV1().Services(sys).Create(ctx, lb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "localhost"}}
	if _, err := remote.Kube.CoreV1().Services(sys).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ips, err := net.DefaultResolver.LookupHost(ctx, "localhost")
	if err != nil || !slices.Contains(ips, "127.0.0.1") {
		t.Skipf("localhost does not resolve to 127.0.0.1 here: %v %v", ips, err)
	}
	eventually(t, "the hostname's address among the endpoints", func() (bool, string) {
		got, err := endpoints()
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(got, func(e string) bool { return len(e) > 15 && e[:16] == "127.0.0.1:15443 " }) &&
			slices.ContainsFunc(got, func(e string) bool { return len(e) > 18 && e[:19] == "203.0.113.20:15443 " }), fmt.Sprint(got)
	})
	eventually(t, "networkz lists the resolved address", func() (bool, string) {
		_, body := d.get("/debug/networkz")
		var got []map[string]any
		_ = json.Unmarshal(body, &got)
		for _, g := range got {
			if g["Addr"] == "127.0.0.1" && g["Network"] == "network2" && g["Cluster"] == "cluster2" && g["Port"] == float64(15443) {
				return true, ""
			}
		}
		return false, string(body)
	})
}

// ipPlus is ip with i added to its last byte.
func ipPlus(ip string, i int) string {
	var a, b, c, d int
	_, _ = fmt.Sscanf(ip, "%d.%d.%d.%d", &a, &b, &c, &d)
	return fmt.Sprintf("%d.%d.%d.%d", a, b, c, d+i)
}
