package generators_test

// Sidecar parity leftovers: inbound protocol stacks, the server names of
// TLS ports' own chains, and the addresses of dual-stack and IPv6-only
// proxies' listeners. See the case files.
var sidecarLeftoverCases = casesIn("sidecar-leftovers")
