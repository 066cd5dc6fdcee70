// Package version reports the build's version, set at link time with
// -ldflags "-X github.com/meshplane/istiod/pkg/version.Version=...", and
// exports it as Istio's istio_build{component, tag} gauge (metrics.go) for
// the components that record themselves.
package version
