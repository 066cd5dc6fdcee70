// Package e2e runs the built istiod binary as a process against temporary
// directories and loopback ports, and checks what an operator sees over HTTP.
package e2e
