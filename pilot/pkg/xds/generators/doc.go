// Package generators builds what sidecars and proxyless gRPC clients are
// sent (CDS, EDS, LDS, RDS) from a PushContext, the registries and the
// endpoint index, with the caches that share resources between proxies of
// the same scope and rule (and the encoded virtual hosts sidecar route
// configurations are spliced from). It registers with the xDS server through
// xds.Generator; resources failing validation are held, not sent.
package generators
