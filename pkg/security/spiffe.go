package security

import (
	"fmt"
	"strings"
)

// SpiffePrefix starts every SPIFFE URI.
const SpiffePrefix = "spiffe://"

// SpiffeID returns the identity of a Kubernetes service account:
// spiffe://<trustDomain>/ns/<ns>/sa/<sa>.
func SpiffeID(trustDomain, ns, sa string) string {
	return SpiffePrefix + trustDomain + "/ns/" + ns + "/sa/" + sa
}

// ParseSpiffeID splits spiffe://<trustDomain>/ns/<ns>/sa/<sa>. Any other
// shape, or an empty part, is an error that quotes the input.
func ParseSpiffeID(id string) (trustDomain, ns, sa string, err error) {
	rest, ok := strings.CutPrefix(id, SpiffePrefix)
	if !ok {
		return "", "", "", fmt.Errorf("identity %q does not start with %q", id, SpiffePrefix)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 5 || parts[1] != "ns" || parts[3] != "sa" {
		return "", "", "", fmt.Errorf("identity %q is not of the form spiffe://<trust domain>/ns/<namespace>/sa/<service account>", id)
	}
	if parts[0] == "" || parts[2] == "" || parts[4] == "" {
		return "", "", "", fmt.Errorf("identity %q has an empty trust domain, namespace or service account", id)
	}
	return parts[0], parts[2], parts[4], nil
}
