package authn

import (
	"slices"

	"github.com/meshplane/istiod/pkg/config/protocol"
)

// ListenerProtocol is how the inbound chains of a port treat its traffic.
type ListenerProtocol int

const (
	// ListenerTCP chains proxy opaque TCP (tcp_proxy).
	ListenerTCP ListenerProtocol = iota
	// ListenerHTTP chains run an HTTP connection manager.
	ListenerHTTP
	// ListenerAuto is a port whose protocol is sniffed (undeclared, and the
	// passthrough): it gets HTTP and TCP chains. A Chain is never Auto.
	ListenerAuto
)

// String names the protocol.
func (p ListenerProtocol) String() string {
	switch p {
	case ListenerHTTP:
		return "HTTP"
	case ListenerAuto:
		return "AUTO"
	default:
		return "TCP"
	}
}

// MarshalText writes String().
func (p ListenerProtocol) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// ListenerProtocolOf maps a declared port protocol to its chains' protocol
// as Istio does: HTTP, HTTP2, HTTP_PROXY, gRPC and gRPC-Web are HTTP;
// undeclared is sniffed (Auto); everything else (TCP, TLS, HTTPS, Mongo,
// Redis, MySQL, UDP) is TCP.
func ListenerProtocolOf(p protocol.Instance) ListenerProtocol {
	switch {
	case p.IsHTTP():
		return ListenerHTTP
	case p.IsUnsupported():
		return ListenerAuto
	default:
		return ListenerTCP
	}
}

// Transport protocols of a filter chain match, as the TLS inspector sets
// them.
const (
	TransportTLS       = "tls"
	TransportRawBuffer = "raw_buffer"
)

// ALPN values inbound chains match on. An Istio client sends "istio" (TCP)
// or istio-http/* (HTTP, from the istio.alpn filter) over mTLS, and
// istio-peer-exchange for the TCP metadata exchange.
var (
	alpnMTLSHTTP     = []string{"istio-http/1.0", "istio-http/1.1", "istio-h2"}
	alpnMTLSTCP      = []string{"istio-peer-exchange", "istio"}
	alpnMTLSAll      = []string{"istio", "istio-peer-exchange", "istio-http/1.0", "istio-http/1.1", "istio-h2"}
	alpnPlainHTTP    = []string{"http/1.1", "h2c"}
	alpnPlainHTTP10  = []string{"http/1.0", "http/1.1", "h2c"}
	emptyApplication []string
)

// Chain is one inbound filter chain of a port, as the listener builder
// must emit it, in order: its filters (Protocol), its filter chain match
// (TransportProtocol, ApplicationProtocols, plus the port the builder
// adds), and whether it terminates Istio mTLS (then its transport socket is
// InboundTLS.For(chain)). A Chain without MTLS has no transport socket,
// even when it matches "tls": that is TLS of the application's own, passed
// through.
type Chain struct {
	// Protocol is ListenerHTTP or ListenerTCP, never ListenerAuto.
	Protocol ListenerProtocol `json:"protocol"`
	// TransportProtocol is TransportTLS or TransportRawBuffer.
	TransportProtocol string `json:"transportProtocol"`
	// ApplicationProtocols is the ALPN match; empty matches any.
	ApplicationProtocols []string `json:"applicationProtocols,omitempty"`
	// MTLS says the chain terminates Istio mTLS.
	MTLS bool `json:"mtls,omitempty"`
}

// ChainOptions are the proxy-independent settings of chain shapes.
type ChainOptions struct {
	// HTTP10 makes the plain-text HTTP chain of a sniffed port also match
	// ALPN http/1.0 (PILOT_HTTP10); Istio leaves it out by default so that
	// HTTP/1.0 falls through to TCP instead of being rejected.
	HTTP10 bool
}

func (o ChainOptions) plainHTTP() []string {
	if o.HTTP10 {
		return alpnPlainHTTP10
	}
	return alpnPlainHTTP
}

// Chains returns the inbound chains of a port in mode for its protocol, in
// Istio 1.31's order:
//
//	STRICT      HTTP: tls+mTLS        TCP: tls+mTLS
//	            Auto: tls[istio-http/*]+mTLS (HTTP), tls+mTLS (TCP)
//	PERMISSIVE  HTTP: tls[istio,istio-peer-exchange,istio-http/*]+mTLS, raw_buffer
//	            TCP:  tls[same]+mTLS, tls (passed through), raw_buffer
//	            Auto: tls[istio-http/*]+mTLS (HTTP), raw_buffer[http/1.1,h2c] (HTTP),
//	                  tls[istio-peer-exchange,istio]+mTLS (TCP), raw_buffer (TCP), tls (TCP, passed through)
//	DISABLE     HTTP: raw_buffer          TCP: raw_buffer
//	            Auto: raw_buffer[http/1.1,h2c] (HTTP), raw_buffer (TCP)
//
// The slices are fresh; the caller may keep or change them.
func Chains(mode Mode, proto ListenerProtocol, opts ChainOptions) []Chain {
	c := func(p ListenerProtocol, transport string, alpn []string, mtls bool) Chain {
		return Chain{Protocol: p, TransportProtocol: transport, ApplicationProtocols: slices.Clone(alpn), MTLS: mtls}
	}
	switch proto {
	case ListenerHTTP:
		switch mode {
		case ModeStrict:
			return []Chain{c(ListenerHTTP, TransportTLS, emptyApplication, true)}
		case ModePermissive:
			return []Chain{
				c(ListenerHTTP, TransportTLS, alpnMTLSAll, true),
				c(ListenerHTTP, TransportRawBuffer, emptyApplication, false),
			}
		default:
			return []Chain{c(ListenerHTTP, TransportRawBuffer, emptyApplication, false)}
		}
	case ListenerAuto:
		switch mode {
		case ModeStrict:
			return []Chain{
				c(ListenerHTTP, TransportTLS, alpnMTLSHTTP, true),
				c(ListenerTCP, TransportTLS, emptyApplication, true),
			}
		case ModePermissive:
			return []Chain{
				c(ListenerHTTP, TransportTLS, alpnMTLSHTTP, true),
				c(ListenerHTTP, TransportRawBuffer, opts.plainHTTP(), false),
				c(ListenerTCP, TransportTLS, alpnMTLSTCP, true),
				c(ListenerTCP, TransportRawBuffer, emptyApplication, false),
				c(ListenerTCP, TransportTLS, emptyApplication, false),
			}
		default:
			return []Chain{
				c(ListenerHTTP, TransportRawBuffer, opts.plainHTTP(), false),
				c(ListenerTCP, TransportRawBuffer, emptyApplication, false),
			}
		}
	default:
		switch mode {
		case ModeStrict:
			return []Chain{c(ListenerTCP, TransportTLS, emptyApplication, true)}
		case ModePermissive:
			return []Chain{
				c(ListenerTCP, TransportTLS, alpnMTLSAll, true),
				c(ListenerTCP, TransportTLS, emptyApplication, false),
				c(ListenerTCP, TransportRawBuffer, emptyApplication, false),
			}
		default:
			return []Chain{c(ListenerTCP, TransportRawBuffer, emptyApplication, false)}
		}
	}
}

// InboundChains returns the chains of a workload (target) port of the
// given protocol under the policy: Chains(p.Mode(port), proto, opts).
func (p Policy) InboundChains(port uint32, proto ListenerProtocol, opts ChainOptions) []Chain {
	return Chains(p.Mode(port), proto, opts)
}

// PortChains are the passthrough chains of one destination port.
type PortChains struct {
	// Port is the destination port the chains match; 0 matches every port
	// without chains of its own.
	Port uint32 `json:"port"`
	// Mode is the mode the chains implement.
	Mode Mode `json:"mode"`
	// Chains are sniffed (ListenerAuto) chains, in order.
	Chains []Chain `json:"chains"`
}

// Passthrough returns the chains of virtualInbound's passthrough, as
// Istio's ForPassthrough: first those for any port, in the workload's mode;
// then, for each port-level port that is not one of targetPorts (the ports
// that get chains of their own: the workload's service target ports, or the
// Sidecar's ingress ports when it declares any), chains for that port in its
// mode. Istio emits the per-port ones in map order; here they are ascending.
func (p Policy) Passthrough(targetPorts []uint32, opts ChainOptions) []PortChains {
	out := []PortChains{{Port: 0, Mode: p.Workload, Chains: Chains(p.Workload, ListenerAuto, opts)}}
	for _, port := range p.PortLevel() {
		if slices.Contains(targetPorts, port) {
			continue
		}
		m := p.Ports[port]
		out = append(out, PortChains{Port: port, Mode: m, Chains: Chains(m, ListenerAuto, opts)})
	}
	return out
}
