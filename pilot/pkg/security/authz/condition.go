package authz

import (
	"fmt"
	"strings"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// The when keys of Istio 1.31.
const (
	keyRequestHeaders       = "request.headers" // request.headers[<name>]
	keySourceIP             = "source.ip"
	keyRemoteIP             = "remote.ip"
	keySourceNamespace      = "source.namespace"
	keySourceServiceAccount = "source.serviceAccount"
	keySourceTrustDomain    = "source.trustDomain"
	keySourcePrincipal      = "source.principal"
	keyRequestPrincipal     = "request.auth.principal"
	keyRequestAudiences     = "request.auth.audiences"
	keyRequestPresenter     = "request.auth.presenter"
	keyRequestClaims        = "request.auth.claims" // request.auth.claims[<name>][<nested>]…
	keyDestinationIP        = "destination.ip"
	keyDestinationPort      = "destination.port"
	keyConnectionSNI        = "connection.sni"
	keyEnvoyFilters         = "experimental.envoy.filters." // experimental.envoy.filters.<filter>[<key>]
)

// exactKeys are the when keys matched as a whole.
var exactKeys = map[string]*attribute{
	keyDestinationIP:        destinationIP,
	keyDestinationPort:      destinationPort,
	keyConnectionSNI:        connectionSNI,
	keySourceIP:             sourceIP,
	keyRemoteIP:             remoteIP,
	keySourceNamespace:      sourceNamespace,
	keySourceTrustDomain:    sourceTrustDomain,
	keySourceServiceAccount: sourceServiceAccount,
	keySourcePrincipal:      sourcePrincipal,
	keyRequestPrincipal:     requestPrincipal,
	keyRequestAudiences:     requestAudiences,
	keyRequestPresenter:     requestPresenter,
}

// whenAttribute finds the attribute of a when key, or nil for a key Istio
// does not know.
func whenAttribute(key string) *attribute {
	if a, ok := exactKeys[key]; ok {
		return a
	}
	switch {
	case strings.HasPrefix(key, keyEnvoyFilters):
		return envoyFilterMetadata
	case strings.HasPrefix(key, keyRequestHeaders):
		return requestHeader
	case strings.HasPrefix(key, keyRequestClaims):
		return requestClaim
	}
	return nil
}

var (
	// destination.ip: the local address the connection came to.
	destinationIP = &attribute{permissionValue: func(_ valueCtx, v string) (*rbacpb.Permission, error) {
		c, err := cidr(v)
		if err != nil {
			return nil, err
		}
		return &rbacpb.Permission{Rule: &rbacpb.Permission_DestinationIp{DestinationIp: c}}, nil
	}}

	// connection.sni: the TLS server name.
	connectionSNI = &attribute{permissionValue: func(_ valueCtx, v string) (*rbacpb.Permission, error) {
		return &rbacpb.Permission{Rule: &rbacpb.Permission_RequestedServerName{RequestedServerName: stringMatch(v)}}, nil
	}}

	// request.headers[<name>]: a request header.
	requestHeader = &attribute{principal: true, httpOnly: true, principalValue: func(c valueCtx, v string) (*rbacpb.Principal, error) {
		name, err := bracketed(strings.TrimPrefix(c.key, keyRequestHeaders))
		if err != nil {
			return nil, err
		}
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_Header{Header: headerMatch(name, v, false)}}, nil
	}}

	// request.auth.audiences: the aud claim.
	requestAudiences = &attribute{principal: true, httpOnly: true, principalList: func(_ valueCtx, vs []string) (*rbacpb.Principal, error) {
		return principalMetadata(jwtClaimValues([]string{"aud"}, anyString(vs))), nil
	}}

	// request.auth.presenter: the azp claim.
	requestPresenter = &attribute{principal: true, httpOnly: true, principalList: func(_ valueCtx, vs []string) (*rbacpb.Principal, error) {
		return principalMetadata(jwtClaimValues([]string{"azp"}, anyString(vs))), nil
	}}

	// request.auth.claims[<claim>][<nested>]…: any claim of the JWT.
	requestClaim = &attribute{principal: true, httpOnly: true, principalList: func(c valueCtx, vs []string) (*rbacpb.Principal, error) {
		path, err := nestedBracketed(strings.TrimPrefix(c.key, keyRequestClaims))
		if err != nil {
			return nil, err
		}
		return principalMetadata(jwtClaimValues(path, anyString(vs))), nil
	}}

	// experimental.envoy.filters.<filter>[<key>]: a value of the dynamic
	// metadata of an Envoy filter; a value [v] matches a list holding v.
	envoyFilterMetadata = &attribute{permissionList: func(c valueCtx, vs []string) (*rbacpb.Permission, error) {
		filter, key, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(c.key, "experimental."), "]"), "[")
		if !ok {
			return nil, fmt.Errorf("invalid key %s: want experimental.envoy.filters.<filter>[<key>]", c.key)
		}
		ms := make([]*matcherpb.ValueMatcher, 0, len(vs))
		for _, v := range vs {
			if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
				ms = append(ms, listContains(stringValue(stringMatch(strings.Trim(v, "[]")))))
			} else {
				ms = append(ms, stringValue(stringMatch(v)))
			}
		}
		return permissionMetadata(metadataMatch(filter, []string{key}, anyValue(ms))), nil
	}}
)

// bracketed reads "[<name>]".
func bracketed(s string) (string, error) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return "", fmt.Errorf("expecting format [<NAME>], but found %s", s)
	}
	return s[1 : len(s)-1], nil
}

// nestedBracketed reads "[a][b]…" as [a b …]. Anything else is read as one
// bracketed name, so "[a.b]" is the claim "a.b" and "[a[b]]" the claim
// "a[b]".
func nestedBracketed(s string) ([]string, error) {
	var names []string
	for begin := 0; begin < len(s); {
		end := closingBracket(s, begin)
		if end < 0 {
			name, err := bracketed(s)
			if err != nil {
				return nil, err
			}
			return []string{name}, nil
		}
		names = append(names, s[begin+1:end])
		begin = end + 1
	}
	return names, nil
}

// closingBracket returns the index of the ] closing the [ at begin, or -1
// when s has no [ at begin or another [ comes first.
func closingBracket(s string, begin int) int {
	if begin >= len(s) || s[begin] != '[' {
		return -1
	}
	for i := begin + 1; i < len(s); i++ {
		switch s[i] {
		case '[':
			return -1
		case ']':
			return i
		}
	}
	return -1
}
