// Package version reports the build's version, set at link time with
// -ldflags "-X github.com/meshplane/istiod/pkg/version.Version=...".
package version
