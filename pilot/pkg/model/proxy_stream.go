package model

import "time"

// ProxyStream is one xDS stream of a connected proxy as the xDS server
// describes it to the components that follow connections without being
// part of the server (WorkloadEntry auto-registration). It is a value: the
// server builds a new one for every call, and the Proxy in it is the
// stream's proxy at that moment (read-only, as every Proxy).
type ProxyStream struct {
	// ID is the connection ID (node ID plus a per-server counter), unique
	// among this server's streams.
	ID string
	// Proxy is the stream's proxy.
	Proxy *Proxy
	// ConnectedAt is when the stream's first request arrived.
	ConnectedAt time.Time
	// NodeLocality is the locality the node itself sent, as Istio writes
	// one ("region", "region/zone" or "region/zone/subzone"; "" when the
	// node sent none), whatever the registry says of the workload.
	NodeLocality string
}
