package listener_test

import (
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// fallbackServerNames are the server names of the chain of a TLS listener
// that goes to cluster (nil: the listener or the chain is missing).
func fallbackServerNames(t *testing.T, ls []*listenerv3.Listener, name, cluster string) ([]string, bool) {
	t.Helper()
	l := modesListener(ls, name)
	if l == nil {
		return nil, false
	}
	if err := l.ValidateAll(); err != nil {
		t.Errorf("%s: invalid: %v", name, err)
	}
	for _, fc := range append(slices.Clone(l.FilterChains), l.DefaultFilterChain) {
		if fc != nil && len(fc.Filters) > 0 && lastTCPProxy(t, fc).GetCluster() == cluster {
			return fc.GetFilterChainMatch().GetServerNames(), true
		}
	}
	return nil, false
}

func tlsService(host, vip string, r model.Resolution, aliases ...model.NamespacedHostname) *model.Service {
	s := svc(host, vip, &model.Port{Name: "tls", Port: 443, Protocol: protocol.TLS})
	s.Resolution, s.Attributes.ServiceRegistry, s.Attributes.Aliases = r, model.External, aliases
	return s
}

// Istio's buildSidecarOutboundTLSFilterChainOpts, the chain of a TLS port
// no tls route applies to: it matches the service's hostname and each
// ExternalName alias with the alias's other names for the proxy's DNS
// domain (GenerateAltVirtualHosts without a port: the absolute name, then
// the short names) when the listener cannot tell the service by address,
// and a DYNAMIC_DNS wildcard ServiceEntry's hostname on its own VIP.
func TestTLSFallbackServerNames(t *testing.T) {
	aliases := []model.NamespacedHostname{
		{Hostname: "legacy.app.svc.cluster.local", Namespace: "app"},
		{Hostname: "old.other.svc.cluster.local", Namespace: "other"},
		{Hostname: "db.corp.example.com", Namespace: "app"},
	}
	services := []*model.Service{
		tlsService("api.example.com", model.UnspecifiedIP, model.DNSLB, aliases...),
		tlsService("vip.example.com", "10.0.0.7", model.DNSLB, aliases...),
		tlsService("*.google.com", "10.0.0.8", model.DynamicDNS),
		tlsService("*.static.example.com", "10.0.0.9", model.DNSLB),
		tlsService("net.example.com", "10.9.0.0/16", model.ClientSideLB, aliases[0]),
	}
	ls := listener.BuildOutbound(services, listener.Options{AllowAny: true, DNSDomain: "app.svc.cluster.local"})
	cases := []struct {
		listener, cluster string
		want              []string
	}{
		{"0.0.0.0_443", "outbound|443||api.example.com", []string{"api.example.com", "db.corp.example.com", "db.corp.example.com.",
			"legacy", "legacy.app", "legacy.app.svc", "legacy.app.svc.cluster.local", "legacy.app.svc.cluster.local.",
			"old.other", "old.other.svc", "old.other.svc.cluster.local", "old.other.svc.cluster.local."}},
		// its VIP tells the service: no server names, aliases or not
		{"10.0.0.7_443", "outbound|443||vip.example.com", nil},
		{"10.0.0.8_443", "outbound|443||*.google.com", []string{"*.google.com"}},
		// a wildcard host of another resolution is told by its VIP
		{"10.0.0.9_443", "outbound|443||*.static.example.com", nil},
		{"0.0.0.0_443", "outbound|443||net.example.com", []string{"legacy", "legacy.app", "legacy.app.svc", "legacy.app.svc.cluster.local",
			"legacy.app.svc.cluster.local.", "net.example.com"}},
	}
	for _, c := range cases {
		got, ok := fallbackServerNames(t, ls, c.listener, c.cluster)
		if !ok {
			t.Errorf("%s: no chain to %s", c.listener, c.cluster)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s → %s: server names %v, want %v", c.listener, c.cluster, got, c.want)
		}
	}

	// a proxy outside Kubernetes: an alias under a domain it shares gets
	// its part before that domain (and, with two labels, the first shared
	// one after it)
	ls = listener.BuildOutbound([]*model.Service{tlsService("api.example.com", model.UnspecifiedIP, model.DNSLB,
		model.NamespacedHostname{Hostname: "db.corp.local.net", Namespace: "app"})}, listener.Options{AllowAny: true, DNSDomain: "vm.local.net"})
	got, _ := fallbackServerNames(t, ls, "0.0.0.0_443", "outbound|443||api.example.com")
	if want := []string{"api.example.com", "db.corp", "db.corp.local", "db.corp.local.net", "db.corp.local.net."}; !slices.Equal(got, want) {
		t.Errorf("outside Kubernetes: %v, want %v", got, want)
	}
}

// An IPv6-only proxy listens on :: for a ServiceEntry without addresses and
// matches its TLS port by server name there; a Sidecar egress listener
// that binds 0.0.0.0 explicitly is not the proxy's wildcard (Istio keeps
// the bind as written), so its chain matches no server name.
func TestTLSFallbackServerNamesIPv6(t *testing.T) {
	api := tlsService("api.example.com", model.UnspecifiedIP, model.DNSLB)
	o := listener.Options{AllowAny: true, Wildcards: []string{"::"}}
	got, ok := fallbackServerNames(t, listener.BuildOutbound([]*model.Service{api}, o), "::_443", "outbound|443||api.example.com")
	if !ok || !slices.Equal(got, []string{"api.example.com"}) {
		t.Errorf("IPv6 proxy, no bind: %v (%v)", got, ok)
	}
	o.Egress = []listener.EgressListener{{Bind: "0.0.0.0", Services: []*model.Service{api}}}
	got, ok = fallbackServerNames(t, listener.BuildOutbound(nil, o), "0.0.0.0_443", "outbound|443||api.example.com")
	if !ok || got != nil {
		t.Errorf("IPv6 proxy, bind 0.0.0.0: %v (%v)", got, ok)
	}
}
