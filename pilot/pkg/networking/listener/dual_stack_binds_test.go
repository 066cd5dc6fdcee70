package listener_test

import (
	"fmt"
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// bindShape is a listener's address, additional addresses and chains.
func bindShape(t *testing.T, l *listenerv3.Listener) string {
	t.Helper()
	if l == nil {
		return "<none>"
	}
	a := l.GetAddress().GetSocketAddress()
	return fmt.Sprintf("%s:%d +%v %s", a.GetAddress(), a.GetPortValue(), modesExtraAddresses(l), egressShape(t, l))
}

// Istio's buildSidecarOutboundListener and buildListenerFromEntry: a
// listener binds to the first of its binds and takes the others as
// additional addresses, whatever ISTIO_DUAL_STACK says: a dual-stack
// proxy's localhosts (127.0.0.1, then ::1), the wildcards of redirected
// HTTP ports, and a service's other addresses for the proxy; a bind the
// Sidecar writes is used as written, alone, and counts as the wildcard
// only when it is the proxy's first wildcard.
func TestOutboundBindsByIPMode(t *testing.T) {
	web := svc("web.ns.svc.cluster.local", "10.0.0.1", &model.Port{Name: "http", Port: 8080, Protocol: protocol.HTTP})
	db := svc("db.ns.svc.cluster.local", "10.0.0.2", &model.Port{Name: "tcp", Port: 5432, Protocol: protocol.TCP})
	nets := svc("nets.ns.svc.cluster.local", "10.9.0.0/16", &model.Port{Name: "tcp", Port: 5433, Protocol: protocol.TCP})
	dual := []string{"0.0.0.0", "::"}
	addrs := func(s *model.Service) []string {
		switch s.Hostname {
		case db.Hostname:
			return []string{"10.0.0.2", "fd00::2"}
		case nets.Hostname:
			return []string{"10.9.0.0/16", "fd00:9::/64"}
		}
		return nil
	}
	cases := []struct {
		name   string
		o      listener.Options
		in     []*model.Service
		want   map[string]string
		absent []string
	}{
		{name: "dual-stack, redirected", o: listener.Options{Wildcards: dual, Addresses: addrs}, in: []*model.Service{web, db, nets},
			want: map[string]string{
				"0.0.0.0_8080":  "0.0.0.0:8080 +[::] 0.0.0.0_8080 bind=false [http_inspector] | raw_buffer[http/1.1 h2c][] rds:8080 | default [][] tcp:PassthroughCluster",
				"10.0.0.2_5432": "10.0.0.2:5432 +[fd00::2] 10.0.0.2_5432 bind=false [] | tcp:outbound|5432||db.ns.svc.cluster.local",
			}},
		{name: "dual-stack, localhost", o: listener.Options{Wildcards: dual, Egress: []listener.EgressListener{
			{Port: 9000, HasPort: true, Protocol: protocol.TCP, Bind: "127.0.0.1", ExtraBinds: []string{"::1"}, BindToPort: true, Services: []*model.Service{db}}}},
			want: map[string]string{
				"127.0.0.1_9000": "127.0.0.1:9000 +[::1] 127.0.0.1_9000 bind=true [] | tcp:outbound|5432||db.ns.svc.cluster.local",
			}},
		{name: "dual-stack, bind 0.0.0.0", o: listener.Options{Wildcards: dual, Egress: []listener.EgressListener{
			{Bind: "0.0.0.0", Services: []*model.Service{web}}}},
			want: map[string]string{
				"0.0.0.0_8080": "0.0.0.0:8080 +[] 0.0.0.0_8080 bind=false [http_inspector] | raw_buffer[http/1.1 h2c][] rds:8080 | default [][] tcp:PassthroughCluster",
			}},
		{name: "IPv6, bind 0.0.0.0", o: listener.Options{Wildcards: []string{"::"}, Egress: []listener.EgressListener{
			{Bind: "0.0.0.0", Services: []*model.Service{web}}}},
			want:   map[string]string{"0.0.0.0_8080": "0.0.0.0:8080 +[] 0.0.0.0_8080 bind=false [] | rds:8080"},
			absent: []string{"::_8080"}},
		{name: "IPv6, bind ::", o: listener.Options{Wildcards: []string{"::"}, Egress: []listener.EgressListener{
			{Bind: "::", Services: []*model.Service{web}}}},
			want: map[string]string{
				"::_8080": ":::8080 +[] ::_8080 bind=false [http_inspector] | raw_buffer[http/1.1 h2c][] rds:8080 | default [][] tcp:PassthroughCluster",
			}},
		{name: "IPv4, no other addresses", o: listener.Options{}, in: []*model.Service{web, db},
			want: map[string]string{
				"0.0.0.0_8080":  "0.0.0.0:8080 +[] 0.0.0.0_8080 bind=false [http_inspector] | raw_buffer[http/1.1 h2c][] rds:8080 | default [][] tcp:PassthroughCluster",
				"10.0.0.2_5432": "10.0.0.2:5432 +[] 10.0.0.2_5432 bind=false [] | tcp:outbound|5432||db.ns.svc.cluster.local",
			}},
	}
	for _, c := range cases {
		c.o.AllowAny = true
		c.o.NoRedirect = true // leave virtualOutbound out
		ls := listener.BuildOutbound(c.in, c.o)
		for name, want := range c.want {
			if got := bindShape(t, modesListener(ls, name)); got != want {
				t.Errorf("%s: %s:\n got %s\nwant %s", c.name, name, got, want)
			}
		}
		for _, name := range c.absent {
			if l := modesListener(ls, name); l != nil {
				t.Errorf("%s: unexpected %s", c.name, name)
			}
		}
	}

	// a CIDR service's other addresses are CIDRs its chain matches too
	ls := listener.BuildOutbound([]*model.Service{nets}, listener.Options{AllowAny: true, NoRedirect: true, Wildcards: dual, Addresses: addrs})
	l := modesListener(ls, "0.0.0.0_5433")
	if l == nil || len(l.FilterChains) == 0 {
		t.Fatalf("no CIDR listener: %v", ls)
	}
	var ranges []string
	for _, r := range l.FilterChains[0].GetFilterChainMatch().GetPrefixRanges() {
		ranges = append(ranges, fmt.Sprintf("%s/%d", r.GetAddressPrefix(), r.GetPrefixLen().GetValue()))
	}
	if !slices.Equal(ranges, []string{"10.9.0.0/16", "fd00:9::/64"}) || !slices.Equal(modesExtraAddresses(l), []string{"::"}) {
		t.Errorf("CIDR listener: ranges %v, additional %v", ranges, modesExtraAddresses(l))
	}
}

// Istio's buildInboundListener: a Sidecar ingress listener that binds to
// its port and defaults to the wildcards of a dual-stack proxy (no global
// unicast address) listens on the second one too, only under
// ISTIO_DUAL_STACK.
func TestBoundInboundExtraBinds(t *testing.T) {
	target := listener.InboundTarget{Port: 9080, Protocol: protocol.HTTP, ServicePort: 9080, Bind: "0.0.0.0", ExtraBinds: []string{"::"}, BindToPort: true}
	for _, dualStack := range []bool{false, true} {
		ls := listener.BuildInboundListeners(listener.Options{Inbound: []listener.InboundTarget{target}, NoRedirect: true,
			Wildcards: []string{"0.0.0.0", "::"}, DualStack: dualStack})
		l := modesListener(ls, "0.0.0.0_9080")
		if l == nil {
			t.Fatalf("dual stack %v: no 0.0.0.0_9080 in %d listeners", dualStack, len(ls))
		}
		var want []string
		if dualStack {
			want = []string{"::"}
		}
		if got := modesExtraAddresses(l); !slices.Equal(got, want) {
			t.Errorf("dual stack %v: additional addresses %v, want %v", dualStack, got, want)
		}
	}
}
