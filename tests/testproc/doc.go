// Package testproc holds what the process-level tests and the load test
// share about running istiod: stopping a child gracefully, and polling a
// condition with a hang guard.
package testproc
