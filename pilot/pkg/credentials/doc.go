// Package credentials serves the certificates that gateway servers name
// in credentialName: Kubernetes Secrets, read from the cluster, in the two
// formats Istio accepts (kubernetes.io/tls keys tls.crt/tls.key/ca.crt, and
// generic keys cert/key/cacert), with the CA of "<name>-cacert" taken from
// a Secret of that name or from the CA key of <name>. Every certificate is
// checked before it is served: a Secret that is missing, lacks the keys or
// holds no valid PEM is an error naming it, so the gateway can leave out
// the one server that needs it instead of waiting for it forever.
package credentials
