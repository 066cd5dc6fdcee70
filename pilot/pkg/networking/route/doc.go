// Package route translates services and VirtualServices into Envoy route
// configurations (RDS): one configuration per port ("9080"), a virtual host
// per service with Istio's domain variants (and per VirtualService host no
// service of the port has, ServiceRoutes.HostOnly), VirtualService HTTP
// routes, the default route when no VirtualService applies, and the
// allow_any host; and a gateway's configurations per server. Where Istio's
// behaviour decides a detail, the comment names the Istio function
// (pilot/pkg/networking/core/...) that decides it; tests/differential
// compares the results with Istio's pilot-discovery.
package route
