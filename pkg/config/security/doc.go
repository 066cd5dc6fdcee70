// Package security holds the TLS vocabulary of Istio's configuration that
// every layer checks the same way: the cipher suite names a server's
// tls.cipherSuites may list. Validation warns about the others, and the
// Gateway API translation and the listener builders drop them, all from
// the one list here; and the Go names of istiod's own TLS servers' cipher
// suites and minimum version (--tls-cipher-suites, --tls-min-version). It
// imports only the standard library.
package security
