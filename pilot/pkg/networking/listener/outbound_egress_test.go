package listener_test

import (
	"fmt"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// egressShape is "name bind=<bool> filters | chain...", each chain "match
// -> rds:<name> or tcp:<cluster>", the default chain last.
func egressShape(t *testing.T, l *listenerv3.Listener) string {
	t.Helper()
	if err := l.ValidateAll(); err != nil {
		t.Errorf("%s: invalid: %v", l.Name, err)
	}
	chain := func(fc *listenerv3.FilterChain) string {
		m := fc.GetFilterChainMatch()
		s := ""
		if m != nil {
			s = fmt.Sprintf("%s%v%v", m.GetTransportProtocol(), m.GetApplicationProtocols(), m.GetServerNames())
		}
		for _, f := range fc.Filters {
			switch f.Name {
			case "envoy.filters.network.tcp_proxy":
				tp := &tcpproxy.TcpProxy{}
				_ = f.GetTypedConfig().UnmarshalTo(tp)
				s += " tcp:" + tp.GetCluster()
			case "envoy.filters.network.http_connection_manager":
				m := &hcm.HttpConnectionManager{}
				_ = f.GetTypedConfig().UnmarshalTo(m)
				s += " rds:" + m.GetRds().GetRouteConfigName()
			}
		}
		return strings.TrimSpace(s)
	}
	var filters []string
	for _, f := range l.ListenerFilters {
		filters = append(filters, strings.TrimPrefix(f.Name, "envoy.filters.listener."))
	}
	out := fmt.Sprintf("%s bind=%v %v", l.Name, l.BindToPort == nil, filters)
	for _, fc := range l.FilterChains {
		out += " | " + chain(fc)
	}
	if l.DefaultFilterChain != nil {
		out += " | default " + chain(l.DefaultFilterChain)
	}
	return out
}

func egressListeners(t *testing.T, o listener.Options) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range listener.BuildOutbound(nil, o) {
		out[l.Name] = egressShape(t, l)
	}
	return out
}

// Listeners of egress listeners, merged the way Istio's
// buildSidecarOutboundListener merges them (listener.go: the conflict
// types NoConflict, HTTPOverTCP, TCPOverHTTP, TCPOverTCP, AutoOverTCP and
// the well-known ports check).
func TestEgressListenerMerges(t *testing.T) {
	web := svc("web.ns.svc.cluster.local", "10.0.0.2", &model.Port{Name: "http", Port: 8080, Protocol: protocol.HTTP})
	db := svc("db.ns.svc.cluster.local", "10.0.0.3", &model.Port{Name: "tcp", Port: 8080, Protocol: protocol.TCP})
	mongo := svc("mongo.ns.svc.cluster.local", "10.0.0.4", &model.Port{Name: "mongo", Port: 8080, Protocol: protocol.Mongo})
	sniffed := svc("any.ns.svc.cluster.local", "10.0.0.5", &model.Port{Name: "any", Port: 8080, Protocol: protocol.Unsupported})
	ext := svc("ext.example.com", "", &model.Port{Name: "tls", Port: 443, Protocol: protocol.TLS})
	cases := []struct {
		name   string
		egress []listener.EgressListener
		want   map[string]string
	}{
		{
			// on a bind that is not the wildcard, HTTP matches everything,
			// so TCP on the same port has no room: the first chain stays
			// and the listener counts as sniffed
			name: "tcp then http on a bind",
			egress: []listener.EgressListener{{Bind: "127.0.0.2", BindToPort: true,
				Services: []*model.Service{db, web}}},
			want: map[string]string{"127.0.0.2_8080": "127.0.0.2_8080 bind=true [] | tcp:outbound|8080||db.ns.svc.cluster.local"},
		},
		{
			// on the wildcard, HTTP matches by ALPN and TCP takes the rest
			name: "tcp then http on the wildcard",
			egress: []listener.EgressListener{{Bind: "0.0.0.0",
				Services: []*model.Service{db, web}}},
			want: map[string]string{"0.0.0.0_8080": "0.0.0.0_8080 bind=false [http_inspector] | raw_buffer[http/1.1 h2c][] rds:8080 | default tcp:outbound|8080||db.ns.svc.cluster.local"},
		},
		{
			// Mongo never shares a port with another protocol
			name: "mongo first",
			egress: []listener.EgressListener{{Bind: "0.0.0.0",
				Services: []*model.Service{mongo, web}}},
			want: map[string]string{"0.0.0.0_8080": "0.0.0.0_8080 bind=false [] | tcp:outbound|8080||mongo.ns.svc.cluster.local"},
		},
		{
			// a sniffed service on its own bind: TCP and HTTP chains, its own
			// routes named host:port
			name: "sniffed on a bind",
			egress: []listener.EgressListener{{Port: 8080, HasPort: true, Protocol: protocol.Unsupported, Bind: "127.0.0.3",
				Services: []*model.Service{sniffed}}},
			want: map[string]string{"127.0.0.3_8080": "127.0.0.3_8080 bind=false [http_inspector] | raw_buffer[http/1.1 h2c][] rds:any.ns.svc.cluster.local:8080 | default tcp:outbound|8080||any.ns.svc.cluster.local"},
		},
		{
			// a TCP egress port: a listener per service VIP, TCP whatever the
			// services declare
			name: "tcp port",
			egress: []listener.EgressListener{{Port: 8080, HasPort: true, Protocol: protocol.TCP,
				Services: []*model.Service{db, web}}},
			want: map[string]string{
				"10.0.0.2_8080": "10.0.0.2_8080 bind=false [] | tcp:outbound|8080||web.ns.svc.cluster.local",
				"10.0.0.3_8080": "10.0.0.3_8080 bind=false [] | tcp:outbound|8080||db.ns.svc.cluster.local",
			},
		},
		{
			// TLS without a VIP on the wildcard: told apart by SNI
			name: "tls by sni",
			egress: []listener.EgressListener{{Port: 443, HasPort: true, Protocol: protocol.TLS,
				Services: []*model.Service{ext}}},
			want: map[string]string{"0.0.0.0_443": "0.0.0.0_443 bind=false [tls_inspector] | [][ext.example.com] tcp:outbound|443||ext.example.com | default [][] tcp:BlackHoleCluster"},
		},
		{
			// a TCP Unix socket listener
			name: "tcp socket",
			egress: []listener.EgressListener{{HasPort: true, Protocol: protocol.TCP, Bind: "unix:///run/db.sock", BindToPort: true,
				Services: []*model.Service{db}}},
			want: map[string]string{"unix:///run/db.sock_0": "unix:///run/db.sock_0 bind=true [] | tcp:outbound|8080||db.ns.svc.cluster.local"},
		},
		{
			// a port listener locks its bind and port: the catch-all adds
			// nothing there, but the same port elsewhere is its own
			name: "locked by a port listener",
			egress: []listener.EgressListener{
				{Port: 8080, HasPort: true, Protocol: protocol.HTTP, Bind: "127.0.0.1", BindToPort: true, Services: []*model.Service{web}},
				{Bind: "127.0.0.1", BindToPort: true, Services: []*model.Service{db, web}},
			},
			want: map[string]string{"127.0.0.1_8080": "127.0.0.1_8080 bind=true [] | rds:8080"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := egressListeners(t, listener.Options{NoRedirect: true, Egress: tc.egress})
			if len(got) != len(tc.want) {
				t.Errorf("listeners %v, want %v", got, tc.want)
			}
			for n, w := range tc.want {
				if got[n] != w {
					t.Errorf("%s:\n got  %s\n want %s", n, got[n], w)
				}
			}
		})
	}
}

// A listener the proxy cannot bind is left out, with nothing in its place.
func TestEgressListenerCanBind(t *testing.T) {
	web := svc("web.ns.svc.cluster.local", "10.0.0.2", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP},
		&model.Port{Name: "http-alt", Port: 8080, Protocol: protocol.HTTP})
	o := listener.Options{Egress: []listener.EgressListener{
		{Port: 80, HasPort: true, Protocol: protocol.HTTP, Bind: "127.0.0.1", BindToPort: true, Services: []*model.Service{web}},
		{Bind: "127.0.0.1", BindToPort: true, Services: []*model.Service{web}},
	}, CanBind: func(bindToPort bool, bind string, port int, p protocol.Instance) bool {
		return !(bindToPort && port < 1024)
	}}
	got := egressListeners(t, o)
	if _, ok := got["127.0.0.1_80"]; ok || got["127.0.0.1_8080"] == "" || got["virtualOutbound"] == "" {
		t.Errorf("listeners %v: want 127.0.0.1_8080 and virtualOutbound only", got)
	}
}
