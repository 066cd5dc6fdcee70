package listener_test

import (
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func modesListener(ls []*listenerv3.Listener, name string) *listenerv3.Listener {
	for _, l := range ls {
		if l.Name == name {
			return l
		}
	}
	return nil
}

func modesExtraAddresses(l *listenerv3.Listener) []string {
	var out []string
	for _, a := range l.AdditionalAddresses {
		out = append(out, a.GetAddress().GetSocketAddress().GetAddress())
	}
	return out
}

func modesFilterNames(l *listenerv3.Listener) []string {
	var out []string
	for _, f := range l.ListenerFilters {
		out = append(out, f.Name)
	}
	return out
}

// TestVirtualListenerAddresses: the virtual listeners' addresses by IP mode
// and flags, as Istio's buildVirtualOutboundListener and
// buildInboundListener pick them.
func TestVirtualListenerAddresses(t *testing.T) {
	cases := []struct {
		name              string
		o                 listener.Options
		address           string
		outExtra, inExtra []string
	}{
		{name: "IPv4", o: listener.Options{}, address: "0.0.0.0"},
		{name: "dual, flag off", o: listener.Options{Wildcards: []string{"0.0.0.0", "::"}}, address: "0.0.0.0"},
		{name: "dual, flag on", o: listener.Options{Wildcards: []string{"0.0.0.0", "::"}, DualStack: true}, address: "0.0.0.0",
			outExtra: []string{"::"}, inExtra: []string{"::"}},
		{name: "IPv6", o: listener.Options{Wildcards: []string{"::"}, DualStack: true}, address: "::"},
		// only virtualOutbound takes 0.0.0.0 under the IPv4-for-IPv6 flag
		{name: "IPv6, IPv4 outbound", o: listener.Options{Wildcards: []string{"::"}, IPv4OutboundForIPv6: true}, address: "::",
			outExtra: []string{"0.0.0.0"}},
		// the flag is for IPv6-only proxies
		{name: "dual, IPv4 outbound", o: listener.Options{Wildcards: []string{"0.0.0.0", "::"}, IPv4OutboundForIPv6: true}, address: "0.0.0.0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vo := modesListener(listener.BuildOutbound(nil, c.o), listener.VirtualOutbound)
			vi := listener.BuildInbound(c.o)
			for _, x := range []struct {
				l     *listenerv3.Listener
				extra []string
			}{{vo, c.outExtra}, {vi, c.inExtra}} {
				if got := x.l.GetAddress().GetSocketAddress().GetAddress(); got != c.address {
					t.Errorf("%s on %s, want %s", x.l.Name, got, c.address)
				}
				if got := modesExtraAddresses(x.l); len(got) != len(x.extra) || (len(got) > 0 && got[0] != x.extra[0]) {
					t.Errorf("%s additional addresses %v, want %v", x.l.Name, got, x.extra)
				}
			}
		})
	}
}

// TestTransparentOnlyWhereRedirected: under TPROXY the virtual listeners
// are transparent and virtualInbound restores the source address; a
// listener that binds to its port is neither.
func TestTransparentOnlyWhereRedirected(t *testing.T) {
	in := []listener.InboundTarget{{Port: 9080, Protocol: protocol.HTTP, ServicePort: 80},
		{Port: 9443, Protocol: protocol.TCP, ServicePort: 9443, Bind: "10.1.0.9", BindToPort: true}}
	for _, tproxy := range []bool{false, true} {
		o := listener.Options{Transparent: tproxy, Inbound: in}
		vo := modesListener(listener.BuildOutbound(nil, o), listener.VirtualOutbound)
		ls := listener.BuildInboundListeners(o)
		vi, bound := modesListener(ls, listener.VirtualInbound), modesListener(ls, "10.1.0.9_9443")
		if vo.GetTransparent().GetValue() != tproxy || vi.GetTransparent().GetValue() != tproxy {
			t.Errorf("tproxy %v: virtualOutbound transparent %v, virtualInbound %v", tproxy, vo.Transparent, vi.Transparent)
		}
		if !tproxy && (vo.Transparent != nil || vi.Transparent != nil) {
			t.Error("REDIRECT: transparent must be left unset, as Istio leaves it")
		}
		fs := modesFilterNames(vi)
		if tproxy && (len(fs) < 2 || fs[0] != "envoy.filters.listener.original_dst" || fs[1] != "envoy.filters.listener.original_src") {
			t.Errorf("tproxy: virtualInbound filters %v, want original_dst then original_src first", fs)
		}
		if !tproxy && len(fs) > 1 && fs[1] == "envoy.filters.listener.original_src" {
			t.Error("REDIRECT: no original_src")
		}
		if bound.Transparent != nil {
			t.Errorf("tproxy %v: a listener that binds to its port is not transparent", tproxy)
		}
		for _, f := range modesFilterNames(bound) {
			if f == "envoy.filters.listener.original_src" {
				t.Errorf("tproxy %v: a listener that binds to its port does not restore the source", tproxy)
			}
		}
	}
}

// TestInboundProtocolDetectionTimeout: the mesh's protocolDetectionTimeout
// is the listener filters timeout of every inbound listener, virtual or
// bound, HTTP inspector or not; virtualOutbound never has one.
func TestInboundProtocolDetectionTimeout(t *testing.T) {
	in := []listener.InboundTarget{{Port: 9080, Protocol: protocol.HTTP, ServicePort: 80},
		{Port: 9443, Protocol: protocol.TCP, ServicePort: 9443, Bind: "10.1.0.9", BindToPort: true}}
	for _, c := range []struct {
		timeout *durationpb.Duration
		want    time.Duration
	}{{nil, 0}, {durationpb.New(0), 0}, {durationpb.New(5 * time.Second), 5 * time.Second}} {
		o := listener.Options{Inbound: in, ProtocolDetectionTimeout: c.timeout}
		for _, l := range listener.BuildInboundListeners(o) {
			if l.ListenerFiltersTimeout == nil || l.ListenerFiltersTimeout.AsDuration() != c.want || !l.ContinueOnListenerFiltersTimeout {
				t.Errorf("%v: %s listener filters timeout %v (continue %v), want %v", c.timeout, l.Name,
					l.ListenerFiltersTimeout, l.ContinueOnListenerFiltersTimeout, c.want)
			}
		}
		if vo := modesListener(listener.BuildOutbound(nil, o), listener.VirtualOutbound); vo.ListenerFiltersTimeout != nil {
			t.Errorf("virtualOutbound has a listener filters timeout %v", vo.ListenerFiltersTimeout)
		}
	}
}

// TestServicePortChainsNamedAfterWildcard: an IPv6-only proxy's service
// port chains are named after ::, as Istio names them after its first
// wildcard; a Sidecar ingress bind keeps its own.
func TestServicePortChainsNamedAfterWildcard(t *testing.T) {
	in := []listener.InboundTarget{{Port: 9080, Protocol: protocol.HTTP, ServicePort: 80},
		{Port: 9090, Protocol: protocol.HTTP, ServicePort: 9090, Bind: "fd00::9"}}
	vi := listener.BuildInbound(listener.Options{Wildcards: []string{"::"}, Inbound: in})
	names := map[string]bool{}
	for _, fc := range vi.FilterChains {
		names[fc.Name] = true
	}
	if !names["::_9080"] || !names["fd00::9_9090"] || names["0.0.0.0_9080"] {
		t.Errorf("chains %v: want ::_9080 and fd00::9_9090", names)
	}
}
