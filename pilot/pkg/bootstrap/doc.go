// Package bootstrap wires a Server from the discovery flags: config sources,
// the aggregate store, mesh config, the HTTP and monitoring listeners with the
// debug endpoints and metrics, the webhook server, and readiness. A Start
// that fails undoes what it started; Shutdown drains and stops the rest.
package bootstrap
