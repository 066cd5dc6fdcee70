package validation

import (
	"fmt"
	"net/http"
	"net/netip"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"
)

// Shared helpers for the networking kinds (VirtualService, DestinationRule,
// Gateway, ServiceEntry, Sidecar, EnvoyFilter, WorkloadEntry, WorkloadGroup).
// Unexported names carry a "net" prefix so they cannot clash with helpers of
// the other kinds in this package.

// netUnixPrefix marks a Unix domain socket address.
const netUnixPrefix = "unix://"

// netMaxRegexLen bounds regexes handed to Envoy (its RE2 program-size limit
// is approximated by length, as Istio does).
const netMaxRegexLen = 1024

var (
	netHeaderNameRe = regexp.MustCompile(`^[-_A-Za-z0-9]+$`)
	// netTokenHeaderRe is an HTTP field name (RFC 7230 token characters).
	// Istio writes "+-." inside its character class, a range that takes in
	// ',' as well; so does this.
	netTokenHeaderRe = regexp.MustCompile("^[!#$%&'*+,\\-.^_`|~A-Za-z0-9]+$")
	// netProbeHeaderRe is a header name of an HTTP probe, as Kubernetes
	// checks it (no underscores).
	netProbeHeaderRe = regexp.MustCompile(`^[-A-Za-z0-9]+$`)
	netHeaderValueRe = regexp.MustCompile("^[^\u0000-\u0008\u000A-\u001F\u007F]*$")
	netLabelRe       = regexp.MustCompile(`^[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?$`)
)

// netCannotCast is the error for a Spec of the wrong type.
func netCannotCast(kind string, spec any) error {
	return fmt.Errorf("cannot cast to %s: got %T", kind, spec)
}

// netProtocols maps the upper-cased protocol names Istio accepts to their
// canonical spelling.
var netProtocols = map[string]string{
	"TCP": "TCP", "UDP": "UDP", "GRPC": "GRPC", "GRPC-WEB": "GRPC-Web",
	"HTTP": "HTTP", "HTTP_PROXY": "HTTP_PROXY", "HTTP2": "HTTP2", "HTTPS": "HTTPS",
	"TLS": "TLS", "MONGO": "Mongo", "REDIS": "Redis", "MYSQL": "MySQL",
}

const netProtocolList = "HTTP, HTTPS, HTTP2, GRPC, GRPC-WEB, HTTP_PROXY, TCP, TLS, MONGO, REDIS, MYSQL, UDP"

// netParseProtocol returns the canonical protocol name (case-insensitive) and
// whether it is supported.
func netParseProtocol(p string) (string, bool) {
	c, ok := netProtocols[strings.ToUpper(p)]
	return c, ok
}

// netCheckProtocol accepts an empty protocol (sniffing) or a supported one.
func netCheckProtocol(p string) error {
	if p == "" {
		return nil
	}
	if _, ok := netParseProtocol(p); !ok {
		return fmt.Errorf("unsupported protocol: %s (supported: %s)", p, netProtocolList)
	}
	return nil
}

func netProtoIsHTTP(p string) bool {
	switch c, _ := netParseProtocol(p); c {
	case "HTTP", "HTTP2", "HTTP_PROXY", "GRPC", "GRPC-Web":
		return true
	}
	return false
}

func netProtoIsTLS(p string) bool {
	c, _ := netParseProtocol(p)
	return c == "HTTPS" || c == "TLS"
}

func netProtoIsTCP(p string) bool {
	switch c, _ := netParseProtocol(p); c {
	case "TCP", "HTTPS", "TLS", "Mongo", "Redis", "MySQL":
		return true
	}
	return false
}

// netIsLabel reports whether s is a DNS-1123 label as Istio checks it
// (letters of either case, digits and inner '-', at most 63 characters).
func netIsLabel(s string) bool {
	return len(s) <= dns1123LabelMaxLength && netLabelRe.MatchString(s)
}

// netCheckPortName requires a non-empty DNS-1123 label.
func netCheckPortName(name string) error {
	if name == "" {
		return fmt.Errorf("invalid port name: (empty; a DNS-1123 label is required)")
	}
	if !netIsLabel(name) {
		return fmt.Errorf("invalid port name: %s (must be a DNS-1123 label)", name)
	}
	return nil
}

// netIsIP reports whether s is an IPv4 or IPv6 address.
func netIsIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// netCheckIP requires an IP address.
func netCheckIP(s string) error {
	if !netIsIP(s) {
		return fmt.Errorf("%s is not a valid IP", s)
	}
	return nil
}

// netCheckFQDN validates a domain name without wildcards.
func netCheckFQDN(host string) error { return CheckFQDN(host) }

// netCheckWildcardHost validates a domain name that may start with a wildcard.
func netCheckWildcardHost(host string) error { return CheckWildcardDNSName(host) }

// netCheckPartialWildcard rejects wildcards that are not a whole first label.
func netCheckPartialWildcard(host string) error {
	if strings.Contains(host, "*") && host != "*" && !strings.HasPrefix(host, "*.") {
		return fmt.Errorf("partial wildcard %q not allowed", host)
	}
	return nil
}

// netCheckUnixAddress validates the part after unix://: an absolute file path
// or an abstract socket name starting with '@'.
func netCheckUnixAddress(addr string) error {
	if addr == "" {
		return fmt.Errorf("unix address must not be empty")
	}
	if strings.HasPrefix(addr, "@") {
		return nil
	}
	if !path.IsAbs(addr) || strings.HasSuffix(addr, "/") {
		return fmt.Errorf("unix address %s is not an absolute path to a file", addr)
	}
	return nil
}

// netCheckDuration requires at least 1ms and millisecond precision.
func netCheckDuration(d *durationpb.Duration) error {
	if err := CheckDuration(d); err != nil {
		return err
	}
	if d != nil && d.AsDuration()%time.Millisecond != 0 {
		return fmt.Errorf("only durations to ms precision are supported")
	}
	return nil
}

// netCheckHeaderName validates an HTTP header name strictly: letters,
// digits, '-' and '_'.
func netCheckHeaderName(name string) error { return netCheckHeaderNameRe(name, netHeaderNameRe) }

// netCheckTokenHeaderName validates an HTTP header name as HTTP defines
// it (token characters).
func netCheckTokenHeaderName(name string) error { return netCheckHeaderNameRe(name, netTokenHeaderRe) }

func netCheckHeaderNameRe(name string, re *regexp.Regexp) error {
	if name == "" {
		return fmt.Errorf("header name cannot be empty")
	}
	if !re.MatchString(name) {
		return fmt.Errorf("header name %s is not a valid header name", name)
	}
	return nil
}

// netIsJWTClaimHeader reports whether a header match key uses the
// @request.auth.claims routing syntax.
func netIsJWTClaimHeader(name string) bool {
	rest, ok := strings.CutPrefix(name, "@request.auth.claims")
	return ok && len(rest) > 1 && (rest[0] == '.' || rest[0] == '[')
}

// netCheckHeaderValue rejects control characters and values Envoy's header
// parser cannot read (malformed %VARIABLE% expressions; "%%" is an escaped
// percent sign).
func netCheckHeaderValue(v string) error {
	if !netHeaderValueRe.MatchString(v) {
		return fmt.Errorf("header value configuration %s is invalid", v)
	}
	if err := checkHeaderValueSyntax(v); err != nil {
		return fmt.Errorf("header value configuration: %w", err)
	}
	return nil
}

// netCheckRegex validates an RE2 regex as Envoy would accept it; where
// names the match in the message, as Istio does ("uri", "headers", ...).
func netCheckRegex(re, where string) error {
	if re == "" {
		return fmt.Errorf("%q: regex string match should not be empty", where)
	}
	if len(re) > netMaxRegexLen {
		return fmt.Errorf("%q: regex is too large, max length allowed is %d", where, netMaxRegexLen)
	}
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Errorf("%q: %w; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)", where, err)
	}
	return nil
}

// netCheckStringMatch validates a StringMatch at p; where names it in
// messages ("uri", "headers", ...). emptyPrefixOK allows prefix ""
// (URIs); presenceOK allows no match type at all ({} checks presence, for
// headers and query parameters).
func netCheckStringMatch(r *Report, p Path, sm *networking.StringMatch, where string, emptyPrefixOK, presenceOK bool) {
	if sm == nil {
		return
	}
	switch m := sm.GetMatchType().(type) {
	case nil:
		if !presenceOK {
			r.Warnf(p, "string match sets none of exact, prefix or regex and matches everything")
		}
	case *networking.StringMatch_Prefix:
		if m.Prefix == "" && !emptyPrefixOK {
			r.Errorf(p.Field("prefix"), "%q: prefix string match should not be empty", where)
		}
	case *networking.StringMatch_Regex:
		r.Add(p.Field("regex"), netCheckRegex(m.Regex, where))
	}
}

// netCheckSelectorLabels validates workload selector labels as Istio does:
// no empty keys, no wildcards; a label that is no valid Kubernetes label is
// a warning (WarnSelectorLabels). It reports false when none are set.
func netCheckSelectorLabels(r *Report, p Path, labels map[string]string) bool {
	for _, k := range netSortedKeys(labels) {
		switch {
		case k == "":
			r.Errorf(p, "empty key is not supported in selector: %q", k+"="+labels[k])
		case strings.Contains(k, "*") || strings.Contains(labels[k], "*"):
			r.Errorf(p.Key(k), "wildcard is not supported in selector: %q", k+"="+labels[k])
		default:
			WarnSelectorLabels(r, p.Key(k), map[string]string{k: labels[k]})
		}
	}
	return len(labels) > 0
}

// netCheckAlphaSelector validates a networking.WorkloadSelector (Sidecar,
// ServiceEntry, EnvoyFilter); an empty selector is a warning.
func netCheckAlphaSelector(r *Report, p Path, sel *networking.WorkloadSelector, kind string) {
	if sel == nil {
		return
	}
	if !netCheckSelectorLabels(r, p.Field("labels"), sel.GetLabels()) {
		r.Warnf(p, "%s: workload selector specified without labels, will be applied to all services in namespace", kind)
	}
}

// netCheckTypeSelector validates a type.v1beta1.WorkloadSelector.
func netCheckTypeSelector(r *Report, p Path, sel *typev1beta1.WorkloadSelector) {
	if sel == nil {
		return
	}
	if !netCheckSelectorLabels(r, p.Field("matchLabels"), sel.GetMatchLabels()) {
		r.Warnf(p, "workload selector specified without labels")
	}
}

// netSortedKeys returns the keys of m in order, so problems in maps are
// reported deterministically.
func netSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// HTTP route building blocks used by VirtualService (and, for destinations,
// by Sidecar).

// netCheckDestination validates a destination: host required (wildcards
// allowed, "*" alone not), subset name and port number.
func netCheckDestination(r *Report, p Path, d *networking.Destination) {
	if d == nil {
		return
	}
	switch h := d.GetHost(); {
	case h == "":
		r.Errorf(p.Field("host"), "empty domain name not allowed (destination host is required)")
	case h == "*":
		r.Errorf(p.Field("host"), "invalid destination host %s", h)
	default:
		if err := netCheckWildcardHost(h); err != nil {
			r.Errorf(p.Field("host"), "invalid destination host %q: %v", h, err)
		}
	}
	if d.GetSubset() != "" && !netIsLabel(d.GetSubset()) {
		r.Errorf(p.Field("subset"), "subset name is invalid: %s (must be a DNS-1123 label)", d.GetSubset())
	}
	if d.GetPort() != nil {
		r.Add(p.Field("port").Field("number"), CheckPort(d.GetPort().GetNumber()))
	}
}

// vsCheckRetries validates the retry policy.
func vsCheckRetries(r *Report, p Path, rt *networking.HTTPRetry) {
	if rt == nil {
		return
	}
	if rt.GetAttempts() < 0 {
		r.Errorf(p.Field("attempts"), "attempts cannot be negative")
	}
	if rt.GetAttempts() == 0 && (rt.GetPerTryTimeout() != nil || rt.GetRetryOn() != "" || rt.GetRetryRemoteLocalities() != nil) {
		r.Errorf(p, "http retry policy configured when attempts are set to 0 (disabled)")
	}
	if rt.GetPerTryTimeout() != nil {
		r.Add(p.Field("perTryTimeout"), netCheckDuration(rt.GetPerTryTimeout()))
	}
	if rt.GetBackoff() != nil {
		r.Add(p.Field("backoff"), netCheckDuration(rt.GetBackoff()))
	}
	if rt.GetRetryOn() == "" {
		return
	}
	for _, policy := range strings.Split(rt.GetRetryOn(), ",") {
		policy = strings.TrimSpace(policy)
		if code, err := strconv.Atoi(policy); err == nil && http.StatusText(code) != "" {
			continue
		}
		if !vsRetryOnPolicies[policy] {
			r.Errorf(p.Field("retryOn"), "%q is not a valid retryOn policy", policy)
		}
	}
}

// vsRetryOnPolicies are the x-envoy-retry-on and x-envoy-retry-grpc-on
// values Envoy supports.
var vsRetryOnPolicies = map[string]bool{
	"5xx": true, "gateway-error": true, "reset": true, "reset-before-request": true,
	"connect-failure": true, "retriable-4xx": true, "refused-stream": true,
	"retriable-status-codes": true, "retriable-headers": true, "envoy-ratelimited": true,
	"http3-post-connect-failure": true, "cancelled": true, "deadline-exceeded": true,
	"internal": true, "resource-exhausted": true, "unavailable": true,
}

func vsStatusErr(status int64) error {
	// Istio's bound is 600, its message 599
	if status < 200 || status > 600 {
		return fmt.Errorf("HTTP status %d is not in range 200-599", status)
	}
	return nil
}

// vsSupportedMethods are the methods allowed in corsPolicy.allowMethods.
var vsSupportedMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true,
	http.MethodOptions: true, http.MethodTrace: true,
}

func vsCheckCORS(r *Report, p Path, c *networking.CorsPolicy) {
	if c == nil {
		return
	}
	for i, o := range c.GetAllowOrigins() {
		op := p.Field("allowOrigins").Index(i)
		if o.GetExact() == "" && o.GetPrefix() == "" && o.GetRegex() == "" {
			r.Errorf(op, "'' is not a valid match type for CORS allow origins")
			continue
		}
		netCheckStringMatch(r, op, o, "corsPolicy.allowOrigins", false, false)
	}
	for i, m := range c.GetAllowMethods() {
		if !vsSupportedMethods[m] {
			r.Errorf(p.Field("allowMethods").Index(i), "%q is not a supported HTTP method", m)
		}
	}
	for _, f := range []struct {
		name  string
		items []string
	}{{"allowHeaders", c.GetAllowHeaders()}, {"exposeHeaders", c.GetExposeHeaders()}} {
		for i, h := range f.items {
			if h != "*" {
				r.Add(p.Field(f.name).Index(i), netCheckTokenHeaderName(h))
			}
		}
	}
	if c.GetMaxAge() != nil {
		r.Add(p.Field("maxAge"), netCheckDuration(c.GetMaxAge()))
		if c.GetMaxAge().GetNanos() > 0 {
			r.Errorf(p.Field("maxAge"), "max_age duration is accurate only to seconds precision")
		}
	}
}

// vsGRPCStatuses are the gRPC status names accepted for abort faults.
var vsGRPCStatuses = map[string]bool{
	"OK": true, "CANCELLED": true, "UNKNOWN": true, "INVALID_ARGUMENT": true,
	"DEADLINE_EXCEEDED": true, "NOT_FOUND": true, "ALREADY_EXISTS": true,
	"PERMISSION_DENIED": true, "RESOURCE_EXHAUSTED": true, "FAILED_PRECONDITION": true,
	"ABORTED": true, "OUT_OF_RANGE": true, "UNIMPLEMENTED": true, "INTERNAL": true,
	"UNAVAILABLE": true, "DATA_LOSS": true, "UNAUTHENTICATED": true,
}

// vsCheckFractionalPercent accepts 0 or a value in [0.0001, 100].
func vsCheckFractionalPercent(r *Report, p Path, pc *networking.Percent) {
	if v := pc.GetValue(); pc != nil && (v < 0 || v > 100 || (v > 0 && v < 0.0001)) {
		r.Errorf(p, "percentage %v is neither 0.0, nor in range [0.0001, 100.0]", v)
	}
}

func vsCheckFault(r *Report, p Path, f *networking.HTTPFaultInjection) {
	if f == nil {
		return
	}
	if f.GetAbort() == nil && f.GetDelay() == nil {
		r.Errorf(p, "HTTP fault injection must have an abort and/or a delay")
	}
	if a := f.GetAbort(); a != nil {
		ap := p.Field("abort")
		vsCheckFractionalPercent(r, ap.Field("percentage"), a.GetPercentage())
		switch e := a.GetErrorType().(type) {
		case *networking.HTTPFaultInjection_Abort_HttpStatus:
			r.Add(ap.Field("httpStatus"), vsStatusErr(int64(e.HttpStatus)))
		case *networking.HTTPFaultInjection_Abort_GrpcStatus:
			if !vsGRPCStatuses[e.GrpcStatus] {
				r.Errorf(ap.Field("grpcStatus"), "gRPC status %q is not supported. See https://github.com/grpc/grpc/blob/master/doc/statuscodes.md "+
					"for a list of supported codes, for example 'NOT_FOUND'", e.GrpcStatus)
			}
		case *networking.HTTPFaultInjection_Abort_Http2Error:
			r.Errorf(ap.Field("http2Error"), "HTTP/2 abort fault injection not supported yet")
		default:
			r.Warnf(ap, "abort configured, but error type not set")
		}
	}
	if d := f.GetDelay(); d != nil {
		dp := p.Field("delay")
		vsCheckFractionalPercent(r, dp.Field("percentage"), d.GetPercentage())
		r.Add(dp.Field("percent"), CheckPercent(float64(d.GetPercent()))) //nolint:staticcheck // deprecated but accepted
		switch t := d.GetHttpDelayType().(type) {
		case *networking.HTTPFaultInjection_Delay_FixedDelay:
			r.Add(dp.Field("fixedDelay"), netCheckDuration(t.FixedDelay))
		case *networking.HTTPFaultInjection_Delay_ExponentialDelay:
			r.Add(dp.Field("exponentialDelay"), netCheckDuration(t.ExponentialDelay))
			r.Errorf(dp.Field("exponentialDelay"), "exponentialDelay not supported yet")
		default:
			r.Warnf(dp, "delay configured, but fixedDelay not set")
		}
	}
}

// vsCheckUnreachable warns, in Istio's words, about rules that can never be
// selected: a rule after one without matches, and matches duplicating an
// earlier one.
func vsCheckUnreachable(r *Report, spec Path, vs *networking.VirtualService) {
	var httpRules []vsRule
	for i, h := range vs.GetHttp() {
		rule := vsRule{name: vsRouteName(h.GetName(), i), present: h != nil}
		for j, m := range h.GetMatch() {
			// match names do not take part in matching
			c := proto.Clone(m).(*networking.HTTPMatchRequest)
			if c != nil {
				c.Name = ""
			}
			rule.matches = append(rule.matches, c)
			rule.matchNames = append(rule.matchNames, vsRouteName(m.GetName(), j))
		}
		httpRules = append(httpRules, rule)
	}
	vsWarnUnreachable(r, spec.Field("http"), httpRules)
	var tcp []vsRule
	for i, t := range vs.GetTcp() {
		rule := vsRule{name: vsRouteName("", i), present: t != nil}
		for j, m := range t.GetMatch() {
			rule.matches = append(rule.matches, m)
			rule.matchNames = append(rule.matchNames, vsRouteName("", j))
		}
		tcp = append(tcp, rule)
	}
	vsWarnUnreachable(r, spec.Field("tcp"), tcp)
	var tls []vsRule
	for i, t := range vs.GetTls() {
		rule := vsRule{name: vsRouteName("", i), present: t != nil}
		for j, m := range t.GetMatch() {
			rule.matches = append(rule.matches, m)
			rule.matchNames = append(rule.matchNames, vsRouteName("", j))
		}
		tls = append(tls, rule)
	}
	vsWarnUnreachable(r, spec.Field("tls"), tls)
}

// vsRule is one route of a VirtualService as the unreachable-rule check
// sees it.
type vsRule struct {
	present    bool
	name       string
	matches    []proto.Message
	matchNames []string
}

// vsRouteName names a rule or match as Istio does: its quoted name, else
// #index.
func vsRouteName(name string, i int) string {
	if name != "" {
		return strconv.Quote(name)
	}
	return "#" + strconv.Itoa(i)
}

func vsWarnUnreachable(r *Report, p Path, rules []vsRule) {
	catchAll := false
	type seen struct {
		m    proto.Message
		rule int
	}
	var prior []seen
	for i, rule := range rules {
		if !rule.present {
			continue
		}
		if len(rule.matches) == 0 {
			if catchAll {
				r.Warnf(p.Index(i), "virtualService rule %s not used (only the last rule can have no matches)", rule.name)
			}
			catchAll = true
			continue
		}
		dups := 0
	next:
		for j, m := range rule.matches {
			if catchAll {
				r.Warnf(p.Index(i).Field("match").Index(j), "virtualService rule %s not used (route without matches defined before)", rule.name)
				continue
			}
			for _, s := range prior {
				if proto.Equal(s.m, m) {
					r.Warnf(p.Index(i).Field("match").Index(j), "virtualService rule %s match %s is not used (duplicate/overlapping match in rule %s)",
						rule.name, rule.matchNames[j], rules[s.rule].name)
					dups++
					continue next
				}
			}
			prior = append(prior, seen{m: m, rule: i})
		}
		if dups == len(rule.matches) {
			r.Warnf(p.Index(i), "virtualService rule %s not used (all matches used by prior rules)", rule.name)
		}
	}
}
