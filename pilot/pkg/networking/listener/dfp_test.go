package listener_test

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func httpFilterNames(t *testing.T, fc *listenerv3.FilterChain) []string {
	t.Helper()
	var m hcm.HttpConnectionManager
	if err := fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(&m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m.HttpFilters {
		out = append(out, f.Name)
	}
	return out
}

// Under ALLOW_ANY_DYNAMIC_DNS virtualOutbound sniffs HTTP for the forward
// proxy chain, between the loop guard and the TCP catch-all, and every
// outbound connection manager carries the shared forward proxy filter
// right before the router; without it nothing of this appears.
func TestAllowAnyDynamicDNSListeners(t *testing.T) {
	services := []*model.Service{svc("web.example.com", "10.97.0.7", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP})}
	for _, dfp := range []bool{false, true} {
		o := listener.Options{AllowAny: true}
		if dfp {
			o.DynamicDNSCache = cluster.AllowAnyDNSCache(clusterv3.Cluster_V4_ONLY, cluster.DNSCapture{})
		}
		ls := listener.BuildOutbound(services, o)
		vo := listenerNamed(t, ls, listener.VirtualOutbound)
		var chains []string
		for _, fc := range vo.FilterChains {
			chains = append(chains, fc.Name)
		}
		want := []string{"virtualOutbound-blackhole", "virtualOutbound-catchall-tcp"}
		if dfp {
			want = []string{"virtualOutbound-blackhole", "virtualOutbound-catchall-tcp-http", "virtualOutbound-catchall-tcp"}
			if len(vo.ListenerFilters) != 1 || vo.ListenerFilters[0].Name != "envoy.filters.listener.http_inspector" {
				t.Errorf("listener filters %v", vo.ListenerFilters)
			}
			if got := httpFilterNames(t, vo.FilterChains[1]); got[len(got)-2] != "envoy.filters.http.dynamic_forward_proxy" {
				t.Errorf("forward proxy chain filters %v", got)
			}
		} else if len(vo.ListenerFilters) != 0 {
			t.Errorf("listener filters %v", vo.ListenerFilters)
		}
		if !slices.Equal(chains, want) {
			t.Errorf("dfp %v: chains %v, want %v", dfp, chains, want)
		}
		got := httpFilterNames(t, listenerNamed(t, ls, "0.0.0.0_80").FilterChains[0])
		if has := slices.Contains(got, "envoy.filters.http.dynamic_forward_proxy"); has != dfp || got[len(got)-1] != "envoy.filters.http.router" {
			t.Errorf("dfp %v: 0.0.0.0_80 filters %v", dfp, got)
		}
		for _, l := range ls {
			if err := l.ValidateAll(); err != nil {
				t.Errorf("%s: %v", l.Name, err)
			}
		}
	}
}

// A DYNAMIC_DNS wildcard's own chains resolve the requested host: its
// HTTP chain with the forward proxy filter on its cache, its TLS and TCP
// chains with the SNI forward proxy (and a TLS inspector); a NONE
// wildcard's chains have neither.
func TestDynamicDNSServiceChains(t *testing.T) {
	for _, res := range []model.Resolution{model.DynamicDNS, model.Passthrough} {
		s := svc("*.example.com", "", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP},
			&model.Port{Name: "tls", Port: 443, Protocol: protocol.TLS}, &model.Port{Name: "tcp", Port: 9000, Protocol: protocol.TCP})
		s.Resolution = res
		s.Attributes.ServiceRegistry = model.External
		dyn := res == model.DynamicDNS
		ls := listener.BuildOutbound([]*model.Service{s}, listener.Options{AllowAny: true, DNSLookupFamily: clusterv3.Cluster_V4_ONLY})
		got := httpFilterNames(t, listenerNamed(t, ls, "0.0.0.0_80").FilterChains[0])
		if slices.Contains(got, "envoy.filters.http.dynamic_forward_proxy") != dyn {
			t.Errorf("%v: 0.0.0.0_80 filters %v", res, got)
		}
		for _, name := range []string{"0.0.0.0_443", "0.0.0.0_9000"} {
			l := listenerNamed(t, ls, name)
			fs := filterNames(l.FilterChains[0])
			if (fs == "envoy.extensions.filters.network.sni_dynamic_forward_proxy,tcp_proxy") != dyn {
				t.Errorf("%v: %s filters %v", res, name, fs)
			}
			hasTLS := len(l.ListenerFilters) > 0 && l.ListenerFilters[0].Name == "envoy.filters.listener.tls_inspector"
			if dyn && !hasTLS {
				t.Errorf("%v: %s has no TLS inspector", res, name)
			}
		}
	}
}
