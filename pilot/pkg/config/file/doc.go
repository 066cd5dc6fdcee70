// Package file is the directory config source: it reads Istio and Gateway
// API objects from YAML/JSON files instead of a Kubernetes API server.
package file
