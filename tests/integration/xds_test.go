package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// adsClient is an ADS stream of a simulated sidecar. Only the test goroutine
// uses it (gRPC streams allow one sender): await reads and ACKs what istiod
// sent while it polls.
type adsClient struct {
	t *testing.T
	c *adsc.Client
}

func dialADS(t *testing.T, d *istiod, cfg adsc.Config) *adsClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := adsc.Dial(ctx, d.srv.GRPCAddr(), cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		c.Close()
	})
	return &adsClient{t: t, c: c}
}

// drain applies and ACKs every response already received. A response that
// breaks a wire rule (or a broken stream) fails the test.
func (a *adsClient) drain() {
	a.t.Helper()
	for {
		_, err := a.c.Next(10 * time.Millisecond)
		if err == nil {
			continue
		}
		if strings.HasPrefix(err.Error(), "no response within") {
			return
		}
		a.t.Fatalf("ADS stream: %v", err)
	}
}

// await polls the client's state until cond holds (30 s at most; the
// failure shows what the client held).
func (a *adsClient) await(what string, cond func() (bool, string)) {
	a.t.Helper()
	eventually(a.t, what, func() (bool, string) {
		a.drain()
		ok, detail := cond()
		return ok, detail + "\n  client holds clusters " + strings.Join(a.c.State(xds.ClusterType), " ") +
			"\n  and load assignments " + strings.Join(a.c.State(xds.EndpointType), " ")
	})
}

func (a *adsClient) cluster(name string) *clusterv3.Cluster {
	c, _ := a.c.Resource(xds.ClusterType, name).(*clusterv3.Cluster)
	return c
}

// endpoints returns the sorted "ip:port" of a held load assignment, or nil
// when none is held.
func (a *adsClient) endpoints(name string) []string {
	cla, _ := a.c.Resource(xds.EndpointType, name).(*endpointv3.ClusterLoadAssignment)
	if cla == nil {
		return nil
	}
	out := []string{}
	for _, l := range cla.Endpoints {
		for _, e := range l.LbEndpoints {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			out = append(out, fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()))
		}
	}
	sort.Strings(out)
	return out
}

// describe summarises what the tests read of a cluster.
func describe(c *clusterv3.Cluster) string {
	if c == nil {
		return "<not held>"
	}
	var maxConn any = "<unset>"
	if th := c.GetCircuitBreakers().GetThresholds(); len(th) > 0 {
		maxConn = th[0].GetMaxConnections().GetValue()
	}
	return fmt.Sprintf("lb=%s maxConnections=%v", c.LbPolicy, maxConn)
}

// A sidecar's ADS stream follows the cluster: a Service with an
// EndpointSlice arrives as an outbound cluster and its endpoints, then a
// DestinationRule changes the cluster, a new endpoint reaches EDS, and
// deleting the Service removes the cluster. Delta and state of the world.
func TestXDSKubernetesChangesReachClient(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delta bool
	}{
		{"delta", true},
		{"sotw", false},
	} {
		t.Run(tc.name, func(t *testing.T) { testXDSChangesReachClient(t, tc.delta) })
	}
}

// xdsRuns numbers the runs of testXDSChangesReachClient in this process, so
// that each uses pod IPs of its own: objects outlive the tests on the shared
// API server (also with -count).
var xdsRuns atomic.Int32

func testXDSChangesReachClient(t *testing.T, delta bool) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	host := "reviews." + ns + ".svc.cluster.local"
	clusterName := "outbound|9080||" + host
	net := fmt.Sprintf("10.203.%d", xdsRuns.Add(1)) // no other test uses 10.203/16
	ip1, ip2 := net+".1", net+".2"

	runningPod(t, env, ns, "reviews-1", ip1, "reviews", map[string]string{"app": "reviews", "version": "v1"})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "reviews", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "reviews"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 9080, TargetPort: intstr.FromString("http")}}}}
	if _, err := env.Kube.CoreV1().Services(ns).Create(registryCtx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slices := env.Kube.DiscoveryV1().EndpointSlices(ns)
	if _, err := slices.Create(registryCtx, endpointSlice(ns, "reviews-abc", "reviews", map[string]string{ip1: "reviews-1"}),
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	a := dialADS(t, d, adsc.Config{Delta: delta,
		NodeID: "sidecar~" + net + ".100~sleep-1." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0",
			"LABELS": map[string]any{"app": "sleep"}}})
	if err := a.c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	a.await("outbound cluster", func() (bool, string) {
		c := a.cluster(clusterName)
		return c != nil && c.GetType() == clusterv3.Cluster_EDS, clusterName + ": " + describe(c)
	})
	// as Envoy does, subscribe to the endpoints of the EDS cluster it got
	if err := a.c.Watch(xds.EndpointType, clusterName); err != nil {
		t.Fatal(err)
	}
	a.await("endpoints of the cluster", func() (bool, string) {
		eps := a.endpoints(clusterName)
		return fmt.Sprint(eps) == fmt.Sprintf("[%s:8080]", ip1), fmt.Sprint(eps)
	})

	// (a) a DestinationRule changes the cluster and adds a subset
	dr := &clientnetworking.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: "reviews", Namespace: ns},
		Spec: networking.DestinationRule{Host: "reviews",
			TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{
					Simple: networking.LoadBalancerSettings_RANDOM}},
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 7}}},
			Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}}}
	if _, err := env.Istio.NetworkingV1().DestinationRules(ns).Create(registryCtx, dr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.await("DestinationRule applied to the cluster", func() (bool, string) {
		c := a.cluster(clusterName)
		th := c.GetCircuitBreakers().GetThresholds()
		return c.GetLbPolicy() == clusterv3.Cluster_RANDOM && len(th) > 0 && th[0].GetMaxConnections().GetValue() == 7,
			clusterName + ": " + describe(c)
	})
	subset := "outbound|9080|v1|" + host
	a.await("subset cluster", func() (bool, string) {
		c := a.cluster(subset)
		return c.GetLbPolicy() == clusterv3.Cluster_RANDOM, subset + ": " + describe(c)
	})

	// (b) a second endpoint reaches EDS
	runningPod(t, env, ns, "reviews-2", ip2, "reviews", map[string]string{"app": "reviews", "version": "v2"})
	cur, err := slices.Get(registryCtx, "reviews-abc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := endpointSlice(ns, "reviews-abc", "reviews", map[string]string{ip1: "reviews-1", ip2: "reviews-2"})
	next.ResourceVersion = cur.ResourceVersion
	if _, err := slices.Update(registryCtx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.await("new endpoint in EDS", func() (bool, string) {
		eps := a.endpoints(clusterName)
		return fmt.Sprint(eps) == fmt.Sprintf("[%s:8080 %s:8080]", ip1, ip2), fmt.Sprint(eps)
	})

	// (c) deleting the Service removes its clusters
	if err := env.Kube.CoreV1().Services(ns).Delete(registryCtx, "reviews", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.await("clusters removed", func() (bool, string) {
		return a.cluster(clusterName) == nil && a.cluster(subset) == nil,
			fmt.Sprintf("%s: %s; %s: %s", clusterName, describe(a.cluster(clusterName)), subset, describe(a.cluster(subset)))
	})
}
