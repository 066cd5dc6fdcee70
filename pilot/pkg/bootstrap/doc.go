// Package bootstrap wires a Server from the discovery flags: config sources,
// the aggregate store, mesh config, the HTTP and monitoring listeners with the
// debug endpoints and metrics, and readiness.
package bootstrap
