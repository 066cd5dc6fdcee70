// Package adsc is an ADS client for tests and load tools. It speaks state of
// the world or delta and checks the wire rules on every message it receives:
// type URLs, nonces, versions, resource types, delta bookkeeping, and that
// every resource passes the Envoy protos' own ValidateAll().
package adsc
