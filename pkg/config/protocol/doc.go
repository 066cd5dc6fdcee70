// Package protocol names the application protocols a port can carry and
// decides, from what a Service or ServiceEntry says about a port, which one it
// is: an explicit protocol (ServiceEntry) or appProtocol (Kubernetes) first,
// then the prefix of the port name ("http", "http-web", "grpc-web-x"), else
// Unsupported, which the data plane sniffs.
package protocol
