// Package crd turns Kubernetes-shaped YAML or JSON documents into
// config.Config and back. It is the ingestion edge for files (the directory
// source, `istiod validate`) and the output shape of /debug/configz.
package crd
