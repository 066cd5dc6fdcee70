// Package route translates services and VirtualServices into Envoy route
// configurations (RDS): one configuration per port ("9080"), a virtual host
// per service with Istio's domain variants, VirtualService HTTP routes, the
// default route when no VirtualService applies, and the allow_any host.
package route
