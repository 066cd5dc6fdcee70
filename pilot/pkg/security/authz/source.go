package authz

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	authzpb "istio.io/api/security/v1beta1"
)

// Sources (from[].source) and the when keys that test the same things. All
// become RBAC principals.

const spiffePrefix = "spiffe://"

var (
	// source.ip, ipBlocks: the downstream connection's address.
	sourceIP = &attribute{principal: true, principalValue: func(_ valueCtx, v string) (*rbacpb.Principal, error) {
		c, err := cidr(v)
		if err != nil {
			return nil, err
		}
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_DirectRemoteIp{DirectRemoteIp: c}}, nil
	}}

	// remote.ip, remoteIpBlocks: the original client (X-Forwarded-For or
	// proxy protocol).
	remoteIP = &attribute{principal: true, principalValue: func(_ valueCtx, v string) (*rbacpb.Principal, error) {
		c, err := cidr(v)
		if err != nil {
			return nil, err
		}
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_RemoteIp{RemoteIp: c}}, nil
	}}

	// source.namespace, namespaces: /ns/<namespace>/ in the peer identity,
	// * matching any characters.
	sourceNamespace = &attribute{principal: true, principalValue: func(c valueCtx, v string) (*rbacpb.Principal, error) {
		parts := strings.Split(v, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		return peerIdentity(regexMatch(".*/ns/"+strings.Join(parts, ".*")+"/.*"), c.filterState), nil
	}}

	// source.serviceAccount, serviceAccounts: <namespace>/<name> or <name> in
	// the policy's namespace.
	sourceServiceAccount = &attribute{principal: true, principalValue: func(c valueCtx, v string) (*rbacpb.Principal, error) {
		ns, sa, ok := strings.Cut(v, "/")
		if !ok {
			ns, sa = c.namespace, v
		}
		// spiffe://<td>/ns/<ns>/[<k>/<v>/…]sa/<sa>[/…]: the trailing part
		// starts with / so that sa/foo does not match sa/foo-bar.
		re := fmt.Sprintf("spiffe://.+/ns/%s/(.+/|)sa/%s(/.+)?", regexp.QuoteMeta(ns), regexp.QuoteMeta(sa))
		return peerIdentity(regexMatch(re), c.filterState), nil
	}}

	// source.trustDomain, trustDomains: the trust domain of the peer
	// identity; * is any, one * inside is any run of non-slash characters.
	sourceTrustDomain = &attribute{principal: true, aliases: expandAliases, principalValue: func(c valueCtx, v string) (*rbacpb.Principal, error) {
		var m *matcherpb.StringMatcher
		switch {
		case v == "*":
			m = prefixMatch(spiffePrefix, false)
		case !strings.Contains(v, "*"):
			m = prefixMatch(spiffePrefix+v+"/", false)
		default:
			before, after, _ := strings.Cut(v, "*")
			m = regexMatch(spiffePrefix + regexp.QuoteMeta(before) + "[^/]*" + regexp.QuoteMeta(after) + "/.*")
		}
		return peerIdentity(m, c.filterState), nil
	}}

	// source.principal, principals: the peer identity without spiffe://.
	sourcePrincipal = &attribute{principal: true, aliases: replaceAliases, principalValue: func(c valueCtx, v string) (*rbacpb.Principal, error) {
		return peerIdentity(prefixedMatch(v, spiffePrefix), c.filterState), nil
	}}

	// request.auth.principal, requestPrincipals: <iss>/<sub> of the JWT.
	requestPrincipal = &attribute{principal: true, httpOnly: true, principalList: requestPrincipals}
)

// requestPrincipals matches iss and sub of the validated JWT. The issuer is
// everything before the last /, as issuers are URLs; * stands for a whole
// part, or for the start of the issuer or the end of the subject.
func requestPrincipals(_ valueCtx, values []string) (*rbacpb.Principal, error) {
	var or []*rbacpb.Principal
	for _, v := range values {
		iss, sub := requestPrincipalMatchers(v)
		or = append(or, principalAnd([]*rbacpb.Principal{
			principalMetadata(jwtClaim("iss", iss)),
			principalMetadata(jwtClaim("sub", sub)),
		}))
	}
	switch len(or) {
	case 0:
		return nil, nil
	case 1:
		return or[0], nil
	}
	return principalOr(or), nil
}

func requestPrincipalMatchers(v string) (iss, sub *matcherpb.StringMatcher) {
	i := strings.LastIndex(v, "/")
	hasSlash := i >= 0
	issuer, subject := v, ""
	if hasSlash {
		issuer, subject = v[:i], v[i+1:]
	}
	switch {
	case v == "*":
		return nonEmpty(), nonEmpty()
	case strings.HasPrefix(v, "*"):
		if !hasSlash {
			return nonEmpty(), suffixMatch(v[1:], false)
		}
		if issuer == "*" {
			return nonEmpty(), exactMatch(subject, false)
		}
		return suffixMatch(issuer[1:], false), exactMatch(subject, false)
	case strings.HasSuffix(v, "*"):
		if !hasSlash {
			return prefixMatch(v[:len(v)-1], false), nonEmpty()
		}
		if subject == "*" {
			return exactMatch(issuer, false), nonEmpty()
		}
		return exactMatch(issuer, false), prefixMatch(subject[:len(subject)-1], false)
	default:
		return exactMatch(issuer, false), exactMatch(subject, false)
	}
}

// sourceConditions are the conditions of one from[].source, in the order
// Istio 1.31 emits them: principals, requestPrincipals, serviceAccounts,
// trustDomains, namespaces, remoteIpBlocks, ipBlocks.
func sourceConditions(i int, s *authzpb.Source) []condition {
	if s == nil {
		return nil
	}
	f := func(name string) string { return fmt.Sprintf("from[%d].source.%s", i, name) }
	var out []condition
	add := func(a *attribute, key, name, notName string, values, notValues []string) {
		if len(values) == 0 && len(notValues) == 0 {
			return
		}
		out = append(out, condition{attr: a, key: key, values: values, notValues: notValues, field: f(name), notField: f(notName)})
	}
	add(sourcePrincipal, keySourcePrincipal, "principals", "notPrincipals", s.GetPrincipals(), s.GetNotPrincipals())
	add(requestPrincipal, keyRequestPrincipal, "requestPrincipals", "notRequestPrincipals", s.GetRequestPrincipals(), s.GetNotRequestPrincipals())
	add(sourceServiceAccount, keySourceServiceAccount, "serviceAccounts", "notServiceAccounts", s.GetServiceAccounts(), s.GetNotServiceAccounts())
	add(sourceTrustDomain, keySourceTrustDomain, "trustDomains", "notTrustDomains", s.GetTrustDomains(), s.GetNotTrustDomains())
	add(sourceNamespace, keySourceNamespace, "namespaces", "notNamespaces", s.GetNamespaces(), s.GetNotNamespaces())
	add(remoteIP, keyRemoteIP, "remoteIpBlocks", "notRemoteIpBlocks", s.GetRemoteIpBlocks(), s.GetNotRemoteIpBlocks())
	add(sourceIP, keySourceIP, "ipBlocks", "notIpBlocks", s.GetIpBlocks(), s.GetNotIpBlocks())
	return out
}

// parsePrefix reads an IP ("10.1.2.3": a /32, or /128 for IPv6) or a CIDR.
func parsePrefix(addr string) (netip.Prefix, error) {
	if addr == "" {
		return netip.Prefix{}, errors.New("empty address")
	}
	if strings.Contains(addr, "/") {
		return netip.ParsePrefix(addr)
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func uint32Value(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }
