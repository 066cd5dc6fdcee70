// Package injecttest holds test helpers for the injector: the defaulting a
// Kubernetes API server applies to a pod (before a mutating webhook sees it
// and again after), so that unit tests can compare injected pods with pods
// an API server admitted, and loaders of the reference injection data.
// Tests only: it reads tests/refdata, so it lives under tests/, which no
// production package imports (tests/arch).
package injecttest
