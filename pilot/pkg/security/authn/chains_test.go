package authn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// shape writes chains as "proto transport[alpn]+mtls", space-separated.
func shape(chains []authn.Chain) string {
	var parts []string
	for _, c := range chains {
		s := fmt.Sprintf("%v %s", c.Protocol, c.TransportProtocol)
		if len(c.ApplicationProtocols) > 0 {
			s += "[" + strings.Join(c.ApplicationProtocols, ",") + "]"
		}
		if c.MTLS {
			s += "+mtls"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

func TestChains(t *testing.T) {
	const (
		all   = "[istio,istio-peer-exchange,istio-http/1.0,istio-http/1.1,istio-h2]"
		ihttp = "[istio-http/1.0,istio-http/1.1,istio-h2]"
	)
	cases := []struct {
		mode  authn.Mode
		proto authn.ListenerProtocol
		want  string
	}{
		{authn.ModeStrict, authn.ListenerHTTP, "HTTP tls+mtls"},
		{authn.ModeStrict, authn.ListenerTCP, "TCP tls+mtls"},
		{authn.ModeStrict, authn.ListenerAuto, "HTTP tls" + ihttp + "+mtls | TCP tls+mtls"},
		{authn.ModePermissive, authn.ListenerHTTP, "HTTP tls" + all + "+mtls | HTTP raw_buffer"},
		{authn.ModePermissive, authn.ListenerTCP, "TCP tls" + all + "+mtls | TCP tls | TCP raw_buffer"},
		{authn.ModePermissive, authn.ListenerAuto, "HTTP tls" + ihttp + "+mtls | HTTP raw_buffer[http/1.1,h2c] | " +
			"TCP tls[istio-peer-exchange,istio]+mtls | TCP raw_buffer | TCP tls"},
		{authn.ModeDisable, authn.ListenerHTTP, "HTTP raw_buffer"},
		{authn.ModeDisable, authn.ListenerTCP, "TCP raw_buffer"},
		{authn.ModeDisable, authn.ListenerAuto, "HTTP raw_buffer[http/1.1,h2c] | TCP raw_buffer"},
	}
	for _, c := range cases {
		t.Run(c.mode.String()+"/"+c.proto.String(), func(t *testing.T) {
			if got := shape(authn.Chains(c.mode, c.proto, authn.ChainOptions{})); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	if got := shape(authn.Chains(authn.ModeDisable, authn.ListenerAuto, authn.ChainOptions{HTTP10: true})); got != "HTTP raw_buffer[http/1.0,http/1.1,h2c] | TCP raw_buffer" {
		t.Errorf("HTTP10: %s", got)
	}
	// The slices are the caller's.
	a := authn.Chains(authn.ModePermissive, authn.ListenerHTTP, authn.ChainOptions{})
	a[0].ApplicationProtocols[0] = "changed"
	if b := authn.Chains(authn.ModePermissive, authn.ListenerHTTP, authn.ChainOptions{}); b[0].ApplicationProtocols[0] != "istio" {
		t.Errorf("Chains shares its ALPN slices")
	}
}

func TestListenerProtocolOf(t *testing.T) {
	for p, want := range map[protocol.Instance]authn.ListenerProtocol{
		protocol.HTTP: authn.ListenerHTTP, protocol.HTTP2: authn.ListenerHTTP, protocol.GRPC: authn.ListenerHTTP,
		protocol.GRPCWeb: authn.ListenerHTTP, protocol.HTTPProxy: authn.ListenerHTTP,
		protocol.TCP: authn.ListenerTCP, protocol.HTTPS: authn.ListenerTCP, protocol.TLS: authn.ListenerTCP,
		protocol.Mongo: authn.ListenerTCP, protocol.Redis: authn.ListenerTCP, protocol.MySQL: authn.ListenerTCP,
		protocol.UDP: authn.ListenerTCP, protocol.Unsupported: authn.ListenerAuto,
	} {
		if got := authn.ListenerProtocolOf(p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
}

func TestPassthrough(t *testing.T) {
	p := authn.Policy{Workload: authn.ModeStrict, Ports: map[uint32]authn.Mode{9102: authn.ModePermissive, 15000: authn.ModeDisable, 80: authn.ModePermissive}}
	got := p.Passthrough([]uint32{9102}, authn.ChainOptions{})
	var ports []string
	for _, pc := range got {
		ports = append(ports, fmt.Sprintf("%d:%v:%d", pc.Port, pc.Mode, len(pc.Chains)))
	}
	if s := strings.Join(ports, " "); s != "0:STRICT:2 80:PERMISSIVE:5 15000:DISABLE:2" {
		t.Errorf("passthrough %s", s)
	}
}

func TestInboundTLSFor(t *testing.T) {
	tls := authn.NewInboundTLS(authn.TLSOptions{TrustDomains: []string{"cluster.local"}})
	for _, c := range authn.Chains(authn.ModePermissive, authn.ListenerAuto, authn.ChainOptions{}) {
		ts := tls.For(c)
		switch {
		case !c.MTLS && ts != nil:
			t.Errorf("%+v: socket on a plain chain", c)
		case c.MTLS && c.Protocol == authn.ListenerHTTP && ts != tls.HTTP:
			t.Errorf("%+v: not the HTTP socket", c)
		case c.MTLS && c.Protocol == authn.ListenerTCP && ts != tls.TCP:
			t.Errorf("%+v: not the TCP socket", c)
		}
	}
}
