package generators_test

import (
	"fmt"
	"sync"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// mutableGateways is a gateway source tests change.
type mutableGateways struct {
	mu  sync.Mutex
	gws []model.NetworkGateway
}

func (m *mutableGateways) NetworkGateways() []model.NetworkGateway {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.NetworkGateway(nil), m.gws...)
}

func (m *mutableGateways) set(gws ...model.NetworkGateway) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gws = gws
}

func sentWithWeights(t *testing.T, r *adsc.Response, name string) string {
	t.Helper()
	la, ok := r.Resources[name].(*endpointv3.ClusterLoadAssignment)
	if !ok {
		t.Fatalf("%s not in the %s response", name, r.TypeURL)
	}
	var out []string
	for _, l := range la.Endpoints {
		for _, e := range l.LbEndpoints {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			out = append(out, fmt.Sprintf("%s:%d/%d", sa.GetAddress(), sa.GetPortValue(), e.GetLoadBalancingWeight().GetValue()))
		}
	}
	return fmt.Sprint(out)
}

// EDS through the generator: with a gateway for net-a, a sidecar of
// another network gets the gateway instead of net-a's endpoints, a sidecar
// of net-a gets them directly, a sidecar without a network goes through
// the gateway (Istio's forceGateway); a gateway change (a forced push)
// reaches the sidecars, whose cached assignments do not survive it.
func TestEDSReplacesOtherNetworksByGateways(t *testing.T) {
	base, idx := bookinfoEnv(t)
	shard := model.NewShardKey(model.Kubernetes, "Kubernetes")
	const host = "reviews.bookinfo.svc.cluster.local"
	sh, _ := idx.ShardsFor(host, "bookinfo")
	var eps []*model.IstioEndpoint
	for _, ep := range sh.Endpoints(shard) {
		cp := *ep
		cp.TLSMode = model.IstioMutualTLSModeLabel
		if ep.Labels["version"] != "v1" {
			cp.Network = "net-a" // v2 and v3
		}
		eps = append(eps, &cp)
	}
	idx.UpdateServiceEndpoints(shard, host, "bookinfo", eps)
	gws := &mutableGateways{}
	gws.set(model.NetworkGateway{Network: "net-a", Cluster: "Kubernetes", Addr: "35.0.0.1", Port: 15443})
	o := base.Options()
	o.NetworkGateways = gws
	env := model.NewEnvironment(o)
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}).Register(s.DS)
	s.DS.InitPushContext(env)
	const all = "outbound|9080||" + host
	want := map[string]string{
		"other": "[10.244.0.21:9080/1 35.0.0.1:15443/2]",
		"net-a": "[10.244.0.21:9080/1 10.244.0.22:9080/1 10.244.0.23:9080/1]",
		"":      "[10.244.0.21:9080/1 35.0.0.1:15443/2]",
	}
	var clients []*adsc.Client
	for i, network := range []string{"other", "net-a", ""} {
		md := map[string]any{"NAMESPACE": "bookinfo"}
		if network != "" {
			md["NETWORK"] = network
		}
		c := xdstest.Dial(t, s, adsc.Config{Delta: i%2 == 0, Metadata: md,
			NodeID: fmt.Sprintf("sidecar~10.244.1.%d~p%d.bookinfo~bookinfo.svc.cluster.local", i+1, i)})
		if err := c.Watch(xds.EndpointType, all); err != nil {
			t.Fatal(err)
		}
		if got := sentWithWeights(t, xdstest.Next(t, c), all); got != want[network] {
			t.Errorf("network %q: %s, want %s", network, got, want[network])
		}
		clients = append(clients, c)
	}

	// a second gateway: the scale factor is 2, each endpoint's 2 is split
	gws.set(model.NetworkGateway{Network: "net-a", Cluster: "Kubernetes", Addr: "35.0.0.1", Port: 15443},
		model.NetworkGateway{Network: "net-a", Cluster: "Kubernetes", Addr: "35.0.0.2", Port: 15443})
	s.DS.PushFunc(env)(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.NetworksTrigger)})
	want["other"] = "[10.244.0.21:9080/2 35.0.0.1:15443/2 35.0.0.2:15443/2]"
	want["net-a"] = "[10.244.0.21:9080/2 10.244.0.22:9080/2 10.244.0.23:9080/2]"
	want[""] = want["other"]
	for i, network := range []string{"other", "net-a", ""} {
		r := xdstest.Next(t, clients[i])
		for r.TypeURL != xds.EndpointType {
			r = xdstest.Next(t, clients[i])
		}
		if got := sentWithWeights(t, r, all); got != want[network] {
			t.Errorf("after the change, network %q: %s, want %s", network, got, want[network])
		}
	}
}
