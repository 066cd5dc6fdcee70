// Package injecttest holds test helpers for the injector: the defaulting a
// Kubernetes API server applies to a pod (before a mutating webhook sees it
// and again after), so that unit tests can compare injected pods with pods
// an API server admitted, and loaders of the reference injection data.
package injecttest
