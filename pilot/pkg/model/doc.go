// Package model is the control plane's view of the mesh: the config store
// interfaces every source implements; services, endpoints and the endpoint
// index the registries fill; proxies as they connect; push requests and the
// NeedsPush gate; and the PushContext, an immutable snapshot built from
// independent indexes (one file each) that generators read.
package model
