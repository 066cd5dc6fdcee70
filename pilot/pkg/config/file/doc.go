// Package file is the directory config source: it reads Istio and Gateway
// API objects from YAML/JSON files instead of a Kubernetes API server, and
// watches the tree (watch.go) for changes, re-reading it periodically so a
// missed event, or a directory that cannot be watched (reported on the
// problems board), heals.
package file
