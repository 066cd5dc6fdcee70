package generators_test

import (
	"path/filepath"
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// plusServices is a registry with more services than its base.
type plusServices struct {
	model.ServiceDiscovery
	extra []*model.Service
}

func (d plusServices) Services() []*model.Service {
	return append(slices.Clone(d.ServiceDiscovery.Services()), d.extra...)
}

// leftoverServer serves a case file's ServiceEntries plus Kubernetes-like
// services (an ExternalName alias, a dual-stack ClusterIP service).
func leftoverServer(t *testing.T, name string, extra ...*model.Service) *xdstest.Server {
	t.Helper()
	env, idx, disc := envFromFile(t, filepath.Join("testdata", name+".yaml"), nil)
	opts := env.Options()
	opts.ServiceDiscovery = plusServices{disc, extra}
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: opts.ServiceDiscovery, DualStack: true}).Register(s.DS)
	s.DS.InitPushContext(model.NewEnvironment(opts))
	return s
}

func leftoverListeners(t *testing.T, s *xdstest.Server, nodeID string, meta map[string]any) *adsc.Client {
	t.Helper()
	md := map[string]any{"NAMESPACE": "app"}
	for k, v := range meta {
		md[k] = v
	}
	c := xdstest.Dial(t, s, adsc.Config{NodeID: nodeID, Metadata: md})
	if err := c.Watch(xds.ListenerType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	return c
}

// serverNamesTo are the server names of the chain of a listener that goes
// to cluster.
func serverNamesTo(t *testing.T, c *adsc.Client, listener, cluster string) []string {
	t.Helper()
	l, _ := c.Resource(xds.ListenerType, listener).(*listenerv3.Listener)
	for _, fc := range append(slices.Clone(l.GetFilterChains()), l.GetDefaultFilterChain()) {
		for _, f := range fc.GetFilters() {
			tp := &tcpproxy.TcpProxy{}
			if f.GetTypedConfig().UnmarshalTo(tp) == nil && tp.GetCluster() == cluster {
				return fc.GetFilterChainMatch().GetServerNames()
			}
		}
	}
	t.Fatalf("%s: no chain to %s", listener, cluster)
	return nil
}

// An ExternalName Service naming a ServiceEntry host is one of its aliases
// (Istio's resolveServiceAliases): the TLS chain of the ServiceEntry, which
// shares the wildcard, matches the alias and its short names for the
// proxy's DNS domain too; proxies of one scope with other DNS domains
// get their own names (the outbound listeners are cached per scope).
func TestTLSServerNamesOfExternalNameAliases(t *testing.T) {
	alias := &model.Service{Hostname: "legacy-api.app.svc.cluster.local", DefaultAddress: model.UnspecifiedIP, Resolution: model.Alias,
		MeshExternal: true, Ports: model.PortList{{Name: "tls", Port: 443, Protocol: protocol.TLS}},
		Attributes: model.ServiceAttributes{ServiceRegistry: model.Kubernetes, Name: "legacy-api", Namespace: "app",
			K8sAttributes: model.K8sAttributes{Type: "ExternalName", ExternalName: "api.example.com"}}}
	s := leftoverServer(t, "sidecar-tls-sni", alias)
	for _, p := range []struct {
		nodeID string
		want   []string
	}{
		{"sidecar~10.1.0.60~a.app~app.svc.cluster.local", []string{"api.example.com", "legacy-api", "legacy-api.app", "legacy-api.app.svc",
			"legacy-api.app.svc.cluster.local", "legacy-api.app.svc.cluster.local."}},
		// a DNS domain the alias does not share: its absolute name only
		{"sidecar~10.1.0.61~b.app~app.svc.corp.example", []string{"api.example.com", "legacy-api.app.svc.cluster.local",
			"legacy-api.app.svc.cluster.local."}},
		{"sidecar~10.1.0.62~c.app~app.svc.cluster.local", []string{"api.example.com", "legacy-api", "legacy-api.app", "legacy-api.app.svc",
			"legacy-api.app.svc.cluster.local", "legacy-api.app.svc.cluster.local."}},
	} {
		c := leftoverListeners(t, s, p.nodeID, nil)
		if got := serverNamesTo(t, c, "0.0.0.0_443", "outbound|443||api.example.com"); !slices.Equal(got, p.want) {
			t.Errorf("%s: server names %v, want %v", p.nodeID, got, p.want)
		}
		// the alias itself gets no listener, and VIP services no names
		if l := c.Resource(xds.ListenerType, "240.240.0.4_443"); l == nil {
			t.Errorf("%s: no listener of vip.example.com", p.nodeID)
		} else if got := serverNamesTo(t, c, "240.240.0.4_443", "outbound|443||vip.example.com"); got != nil {
			t.Errorf("%s: vip.example.com matches %v", p.nodeID, got)
		}
	}
}

// A Kubernetes Service's VIPs in the proxy's cluster, of its families,
// decide the listener's address and additional addresses (Istio's
// GetAddressForProxy and GetExtraAddressesForProxy); proxies of one scope
// in other clusters or IP modes get their own listeners.
func TestListenerAddressesPerClusterAndFamily(t *testing.T) {
	ledger := &model.Service{Hostname: "ledger.app.svc.cluster.local", DefaultAddress: "10.96.50.1",
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"c1": {"10.96.50.1", "fd00:96::50"}, "c2": {"10.97.50.1"}}},
		Ports:       model.PortList{{Name: "tcp", Port: 5000, Protocol: protocol.TCP}},
		Attributes:  model.ServiceAttributes{ServiceRegistry: model.Kubernetes, Name: "ledger", Namespace: "app"}}
	s := leftoverServer(t, "sidecar-tls-sni", ledger)
	for _, p := range []struct {
		name, nodeID string
		meta         map[string]any
		listener     string
		extra        []string
	}{
		{"dual-stack in c1", "sidecar~10.1.0.70~a.app~app.svc.cluster.local",
			map[string]any{"CLUSTER_ID": "c1", "INSTANCE_IPS": "10.1.0.70,fd00::70"}, "10.96.50.1_5000", []string{"fd00:96::50"}},
		{"dual-stack in c2", "sidecar~10.1.0.71~b.app~app.svc.cluster.local",
			map[string]any{"CLUSTER_ID": "c2", "INSTANCE_IPS": "10.1.0.71,fd00::71"}, "10.97.50.1_5000", nil},
		{"IPv4 in c1", "sidecar~10.1.0.72~c.app~app.svc.cluster.local", map[string]any{"CLUSTER_ID": "c1"}, "10.96.50.1_5000", nil},
		{"IPv6 in c1", "sidecar~fd00::73~d.app~app.svc.cluster.local", map[string]any{"CLUSTER_ID": "c1"}, "fd00:96::50_5000", nil},
		{"no cluster", "sidecar~10.1.0.74~e.app~app.svc.cluster.local",
			map[string]any{"INSTANCE_IPS": "10.1.0.74,fd00::74"}, "10.96.50.1_5000", nil},
	} {
		c := leftoverListeners(t, s, p.nodeID, p.meta)
		l, _ := c.Resource(xds.ListenerType, p.listener).(*listenerv3.Listener)
		if l == nil {
			t.Errorf("%s: no %s in %v", p.name, p.listener, c.State(xds.ListenerType))
			continue
		}
		var extra []string
		for _, a := range l.AdditionalAddresses {
			extra = append(extra, a.GetAddress().GetSocketAddress().GetAddress())
		}
		if !slices.Equal(extra, p.extra) {
			t.Errorf("%s: %s additional addresses %v, want %v", p.name, p.listener, extra, p.extra)
		}
	}
}

// TestLeftoverCasesValid: every cluster and listener of the leftover
// golden cases passes Envoy's own validation.
func TestLeftoverCasesValid(t *testing.T) {
	for _, gc := range sidecarLeftoverCases {
		t.Run(gc.name, func(t *testing.T) {
			checkCaseValid(t, gc.name)
		})
	}
}
