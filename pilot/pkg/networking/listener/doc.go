// Package listener translates the services a sidecar sees into Envoy
// listeners (LDS), in Istio's shapes:
//
//   - virtualOutbound on 15001 captures outbound traffic and hands each
//     connection to the listener of its original destination;
//   - 0.0.0.0_<port> per HTTP port, with an HTTP connection manager on RDS;
//   - <vip>_<port> per TCP service port, and 0.0.0.0_<port> with one chain
//     per server name for TLS services without a VIP; the chains follow
//     VirtualService tcp routes (outbound_tcp_routes.go) and, on TLS and
//     HTTPS ports, tls routes by SNI (outbound_tls_routes.go), with the
//     Mongo, Redis and MySQL filters and DestinationRule tunnels
//     (outbound_protocols.go);
//   - <vip>_<port> per service port without a declared protocol (sniffed):
//     a TCP chain to its cluster and, by the HTTP inspector, an HTTP chain
//     on its own routes "<host>:<port>"; without a VIP (or with a CIDR,
//     matched by the TCP chain) it merges into 0.0.0.0_<port> by Istio's
//     conflict rules (listener.go classicOutbound, outbound_egress.go);
//   - virtualInbound on 15006, with chains per protocol for the proxy's
//     own ports and for the rest (passthrough), each in mTLS and plain text;
//   - by the proxy's interception and IP modes: under TPROXY the virtual
//     listeners are transparent and virtualInbound restores the client's
//     address; an IPv6-only proxy listens on ::, a dual-stack one also on
//     its other wildcard (listener.go Options.Wildcards); the ProxyConfig
//     connectionSettings go on every HTTP connection manager
//     (connection_settings.go);
//   - for a Sidecar: its egress listeners' listeners (<bind>_<port>, Unix
//     sockets, HTTP_PROXY ports, merged per bind and port as Istio merges
//     them, outbound_egress.go) and its ingress listeners' chains, or
//     listeners of their own that bind to their ports with captureMode NONE
//     or on a proxy that does not redirect (inbound_sidecar.go).
package listener
