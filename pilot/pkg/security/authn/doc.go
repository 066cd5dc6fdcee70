// Package authn translates authentication policy into the data and Envoy
// protos the listener and cluster builders consume, as Istio 1.31 does. It
// builds no listener or cluster itself.
//
//   - peer.go: PeerAuthentication → the effective mTLS of a workload
//     (EffectiveMTLS, ProxyMTLS → Policy, with Mode(port) per target port);
//   - destination.go: the mode a client infers for a destination namespace
//     (DestinationMode), which decides auto mTLS;
//   - chains.go: a mode and a port protocol → the inbound filter chains of
//     that port, as data (Chains, Policy.InboundChains, Policy.Passthrough);
//   - tls.go: the Istio mTLS DownstreamTlsContext those chains terminate
//     (DownstreamTLSContext, NewInboundTLS);
//   - jwt.go: RequestAuthentication → envoy.filters.http.jwt_authn
//     (JwtFilter), key sets from a JwksResolver;
//   - resolver.go, resolver_fetch.go: the JwksResolver istiod runs (HTTP
//     fetch, cache, refresh) — the only I/O and the only goroutine here.
//
// Everything but the resolver is a pure function of its arguments: no I/O,
// no clock, no globals; options arrive as typed structs. Returned values are
// fresh and owned by the caller unless a doc comment says they are shared;
// inputs are never modified.
//
// A listener builder, per sidecar and push:
//
//	root := push.RootNamespace()
//	pol := authn.ProxyMTLS(push.PeerAuthentications(proxy), authn.MTLSOptions{RootNamespace: root})
//	tlsOpts := authn.TLSOptionsFromMesh(push.Mesh)
//	tlsOpts.Certs = authn.ServerCertsFromMetadata(proxy.Metadata)
//	sockets := authn.NewInboundTLS(tlsOpts)
//	for each target port p of the proxy's services:
//		for _, c := range pol.InboundChains(p, authn.ListenerProtocolOf(proto), chainOpts) { … sockets.For(c) … }
//	for _, pc := range pol.Passthrough(targetPorts, chainOpts) { … }   // virtualInbound's passthrough chains
//	jwt := authn.JwtFilter(push.RequestAuthentications(proxy), authn.JWTOptions{Resolver: resolver})
//
// A cluster builder gives auto mTLS to a mesh-internal destination unless
// authn.DestinationMode(push, root, svc.Attributes.Namespace) is
// ModeDisable.
package authn
