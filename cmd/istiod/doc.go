// Command istiod is an Istio-compatible control plane.
package main
