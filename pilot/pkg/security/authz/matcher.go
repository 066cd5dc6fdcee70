package authz

import (
	"regexp"
	"strings"

	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// Envoy string matchers for Istio's value syntax: "*" is "present" (a
// non-empty value), "*x" a suffix, "x*" a prefix, anything else exact.

func exactMatch(s string, ignoreCase bool) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherpb.StringMatcher_Exact{Exact: s}}
}

func prefixMatch(s string, ignoreCase bool) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: s}}
}

func suffixMatch(s string, ignoreCase bool) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherpb.StringMatcher_Suffix{Suffix: s}}
}

func regexMatch(re string) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: re}}}
}

// nonEmpty matches any non-empty string (Istio's "*").
func nonEmpty() *matcherpb.StringMatcher { return regexMatch(".+") }

// stringMatch is the matcher of an Istio value.
func stringMatch(v string) *matcherpb.StringMatcher { return prefixedMatch(v, "") }

// prefixedMatch is the matcher of an Istio value that Envoy sees behind a
// fixed prefix (spiffe:// for principals). "*" ignores the prefix; a suffix
// match behind a prefix needs a regex.
func prefixedMatch(v, prefix string) *matcherpb.StringMatcher {
	switch {
	case v == "*":
		return nonEmpty()
	case strings.HasPrefix(v, "*"):
		if prefix == "" {
			return suffixMatch(v[1:], false)
		}
		return regexMatch(prefix + ".*" + regexp.QuoteMeta(v[1:]))
	case strings.HasSuffix(v, "*"):
		return prefixMatch(prefix+v[:len(v)-1], false)
	default:
		return exactMatch(prefix+v, false)
	}
}

// headerMatch matches header name against an Istio value; "*" is a
// presence match (an empty prefix or suffix is invalid in Envoy).
func headerMatch(name, v string, ignoreCase bool) *routepb.HeaderMatcher {
	h := &routepb.HeaderMatcher{Name: name}
	var m *matcherpb.StringMatcher
	switch {
	case v == "*":
		h.HeaderMatchSpecifier = &routepb.HeaderMatcher_PresentMatch{PresentMatch: true}
		return h
	case strings.HasPrefix(v, "*"):
		m = suffixMatch(v[1:], ignoreCase)
	case strings.HasSuffix(v, "*"):
		m = prefixMatch(v[:len(v)-1], ignoreCase)
	default:
		m = exactMatch(v, ignoreCase)
	}
	h.HeaderMatchSpecifier = &routepb.HeaderMatcher_StringMatch{StringMatch: m}
	return h
}

func stringValue(m *matcherpb.StringMatcher) *matcherpb.ValueMatcher {
	return &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: m}}
}

// anyValue ORs value matchers; one needs no OR.
func anyValue(ms []*matcherpb.ValueMatcher) *matcherpb.ValueMatcher {
	if len(ms) == 1 {
		return ms[0]
	}
	return &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_OrMatch{OrMatch: &matcherpb.OrMatcher{ValueMatchers: ms}}}
}

// anyString matches any of the Istio values.
func anyString(vs []string) *matcherpb.ValueMatcher {
	ms := make([]*matcherpb.ValueMatcher, 0, len(vs))
	for _, v := range vs {
		ms = append(ms, stringValue(stringMatch(v)))
	}
	return anyValue(ms)
}

// listContains matches a list holding one element that v matches.
func listContains(v *matcherpb.ValueMatcher) *matcherpb.ValueMatcher {
	return &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_ListMatch{ListMatch: &matcherpb.ListMatcher{
		MatchPattern: &matcherpb.ListMatcher_OneOf{OneOf: v},
	}}}
}

// metadataMatch matches the dynamic metadata of filter at path.
func metadataMatch(filter string, path []string, v *matcherpb.ValueMatcher) *matcherpb.MetadataMatcher {
	segs := make([]*matcherpb.MetadataMatcher_PathSegment, 0, len(path))
	for _, k := range path {
		segs = append(segs, &matcherpb.MetadataMatcher_PathSegment{Segment: &matcherpb.MetadataMatcher_PathSegment_Key{Key: k}})
	}
	return &matcherpb.MetadataMatcher{Filter: filter, Path: segs, Value: v}
}
