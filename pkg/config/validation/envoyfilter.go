package validation

import (
	"regexp"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
)

// efHCM is the name of the HTTP connection manager network filter, the only
// filter whose sub filters (HTTP filters) can be matched.
const efHCM = "envoy.filters.network.http_connection_manager"

// efDeprecatedNames maps legacy Envoy filter names to their replacements.
var efDeprecatedNames = map[string]string{
	"envoy.http_connection_manager": efHCM,
	"envoy.tcp_proxy":               "envoy.filters.network.tcp_proxy",
	"envoy.router":                  "envoy.filters.http.router",
	"envoy.cors":                    "envoy.filters.http.cors",
	"envoy.fault":                   "envoy.filters.http.fault",
	"envoy.lua":                     "envoy.filters.http.lua",
	"envoy.ext_authz":               "envoy.filters.http.ext_authz",
	"envoy.rate_limit":              "envoy.filters.http.ratelimit",
	"envoy.grpc_web":                "envoy.filters.http.grpc_web",
	"envoy.gzip":                    "envoy.filters.http.gzip",
	"envoy.health_check":            "envoy.filters.http.health_check",
	"envoy.listener.tls_inspector":  "envoy.filters.listener.tls_inspector",
	"envoy.listener.http_inspector": "envoy.filters.listener.http_inspector",
	"envoy.listener.original_dst":   "envoy.filters.listener.original_dst",
}

// efMaxProxyVersionLen bounds the proxyVersion regex Istio compiles; Istio
// ignores a longer version match and only warns about it.
const efMaxProxyVersionLen = 1024

// ValidateEnvoyFilter checks an EnvoyFilter, rejecting what Istio's
// validation rejects. Everything else it reports is a warning: rules of the
// CRD schema (targetRefs), patches of the WAYPOINT context (Istio does not
// validate them), operations that have no effect for their applyTo
// (IST0152..IST0154), and relative operations without a priority (IST0151).
func ValidateEnvoyFilter(cfg config.Config) (Warning, error) {
	ef, ok := cfg.Spec.(*networking.EnvoyFilter)
	if !ok {
		return nil, netCannotCast("EnvoyFilter", cfg.Spec)
	}
	if ef == nil {
		ef = &networking.EnvoyFilter{}
	}
	r := &Report{}
	spec := Path("spec")
	netCheckAlphaSelector(r, spec.Field("workloadSelector"), ef.GetWorkloadSelector(), "Envoy filter")
	efCheckTargetRefs(r, spec, ef)
	for i, cp := range ef.GetConfigPatches() {
		p := spec.Field("configPatches").Index(i)
		if cp == nil {
			r.Errorf(p, "Envoy filter: null config patch")
			continue
		}
		patch := &Report{}
		efCheckPatch(patch, p, cp, ef.GetPriority())
		waypoint := cp.GetMatch().GetContext() == networking.EnvoyFilter_WAYPOINT
		if waypoint && patch.HasErrors() {
			r.Warnf(p.Field("match").Field("context"),
				"Envoy filter: Istio does not validate patches of the WAYPOINT context; their problems are warnings")
		}
		r.Merge(patch, waypoint)
	}
	return r.Result()
}

// efCheckTargetRefs checks targetRefs against the rules of the EnvoyFilter
// CRD schema. Istio's validation has none of them, so they are warnings here;
// a Kubernetes API server with Istio's CRDs rejects such an object.
func efCheckTargetRefs(r *Report, spec Path, ef *networking.EnvoyFilter) {
	const schema = " (a rule of the EnvoyFilter CRD schema, which Istio's validation does not check)"
	if ef.GetWorkloadSelector() != nil && len(ef.GetTargetRefs()) > 0 {
		r.Warnf(spec, "only one of targetRefs or workloadSelector can be set"+schema)
	}
	for i, ref := range ef.GetTargetRefs() {
		rp := spec.Field("targetRefs").Index(i)
		if ref == nil {
			r.Warnf(rp, "targetRef may not be null"+schema)
			continue
		}
		if ref.GetName() == "" {
			r.Warnf(rp.Field("name"), "targetRef name must be set"+schema)
		}
		if ref.GetKind() == "" {
			r.Warnf(rp.Field("kind"), "targetRef kind must be set"+schema)
		}
		if ref.GetNamespace() != "" {
			r.Warnf(rp.Field("namespace"), "targetRef namespace must not be set; cross namespace referencing is not supported"+schema)
		}
	}
}

// efCheckPatch validates one config patch as Istio does: applyTo, patch,
// operation and value must be set, the proxy version must be a regex, the
// match must line up with applyTo, and the value must decode as the Envoy
// type applyTo names. It also flags operations that do nothing and relative
// operations without priority (warnings).
func efCheckPatch(r *Report, p Path, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch, priority int32) {
	applyTo := cp.GetApplyTo()
	_, applyKnown := networking.EnvoyFilter_ApplyTo_name[int32(applyTo)]
	applyKnown = applyKnown && applyTo != networking.EnvoyFilter_INVALID
	if applyTo == networking.EnvoyFilter_INVALID {
		r.Errorf(p.Field("applyTo"), "Envoy filter: missing applyTo")
	}
	if pv := cp.GetMatch().GetProxy().GetProxyVersion(); pv != "" {
		pvp := p.Field("match").Field("proxy").Field("proxyVersion")
		if len(pv) > efMaxProxyVersionLen {
			r.Warnf(pvp, "Envoy filter: proxyVersion match exceeds %d characters and will be ignored", efMaxProxyVersionLen)
		} else if _, err := regexp.Compile(pv); err != nil {
			r.Errorf(pvp, "Envoy filter: invalid regex for proxy version, [%v]", err)
		}
	}
	if applyKnown {
		efCheckMatch(r, p.Field("match"), cp)
	}
	pp := p.Field("patch")
	if cp.GetPatch() == nil {
		r.Errorf(pp, "Envoy filter: missing patch")
		return
	}
	op := cp.GetPatch().GetOperation()
	_, opKnown := networking.EnvoyFilter_Patch_Operation_name[int32(op)]
	switch {
	case op == networking.EnvoyFilter_Patch_INVALID:
		r.Errorf(pp.Field("operation"), "Envoy filter: missing patch operation")
		return
	case !opKnown:
		r.Warnf(pp.Field("operation"), "Envoy filter: unknown patch operation %d has no effect", int32(op))
	}
	value := cp.GetPatch().GetValue()
	switch {
	case op == networking.EnvoyFilter_Patch_REMOVE && value != nil:
		r.Warnf(pp.Field("value"), "Envoy filter: patch value is ignored for the REMOVE operation")
	case op != networking.EnvoyFilter_Patch_REMOVE && value == nil:
		r.Errorf(pp.Field("value"), "Envoy filter: missing patch value for non-remove operation (%s)", op)
	}
	switch {
	case value != nil && applyTo != networking.EnvoyFilter_INVALID:
		efCheckValue(r, pp.Field("value"), applyTo, value)
	case !applyKnown && applyTo != networking.EnvoyFilter_INVALID:
		r.Warnf(p.Field("applyTo"), "Envoy filter: unknown applyTo %d matches nothing", int32(applyTo))
	}
	if applyKnown && opKnown {
		efCheckOperationContext(r, pp.Field("operation"), applyTo, op, priority)
	}
}

// efCheckMatch checks that the match kind lines up with applyTo and that
// filter matches name what they match.
func efCheckMatch(r *Report, p Path, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch) {
	m := cp.GetMatch()
	if m == nil || m.GetObjectTypes() == nil {
		return
	}
	switch cp.GetApplyTo() {
	case networking.EnvoyFilter_LISTENER_FILTER:
		// Istio does not check this match; a non-listener one matches nothing.
		if m.GetListener() == nil {
			r.Warnf(p, "Envoy filter: applyTo LISTENER_FILTER with a non listener match matches nothing")
			return
		}
		if lf := m.GetListener().GetListenerFilter(); lf != "" {
			efWarnDeprecatedName(r, p.Field("listener").Field("listenerFilter"), lf)
		}
	case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_FILTER_CHAIN,
		networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_HTTP_FILTER:
		if m.GetListener() == nil {
			r.Errorf(p, "Envoy filter: applyTo for listener class objects cannot have non listener match")
			return
		}
		efCheckFilterMatch(r, p.Field("listener").Field("filterChain").Field("filter"), cp.GetApplyTo(),
			m.GetListener().GetFilterChain().GetFilter())
		if lf := m.GetListener().GetListenerFilter(); lf != "" {
			efWarnDeprecatedName(r, p.Field("listener").Field("listenerFilter"), lf)
		}
	case networking.EnvoyFilter_ROUTE_CONFIGURATION, networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_HTTP_ROUTE:
		if m.GetRouteConfiguration() == nil {
			r.Errorf(p, "Envoy filter: applyTo for http route class objects cannot have non route configuration match")
		}
	case networking.EnvoyFilter_CLUSTER:
		if m.GetCluster() == nil {
			r.Errorf(p, "Envoy filter: applyTo for cluster class objects cannot have non cluster match")
		}
	}
}

func efCheckFilterMatch(r *Report, p Path, applyTo networking.EnvoyFilter_ApplyTo, f *networking.EnvoyFilter_ListenerMatch_FilterMatch) {
	if f == nil {
		return
	}
	if applyTo == networking.EnvoyFilter_LISTENER || applyTo == networking.EnvoyFilter_FILTER_CHAIN {
		r.Warnf(p, "Envoy filter: filter match has no effect when used with %v", applyTo)
	}
	if f.GetName() == "" {
		r.Errorf(p.Field("name"), "Envoy filter: filter match has no name to match on")
		return
	}
	efWarnDeprecatedName(r, p.Field("name"), f.GetName())
	sub := f.GetSubFilter()
	if sub == nil {
		return
	}
	sp := p.Field("subFilter")
	switch {
	case applyTo != networking.EnvoyFilter_HTTP_FILTER:
		r.Errorf(sp, "Envoy filter: subfilter match can be used with applyTo HTTP_FILTER only")
	case f.GetName() != efHCM && f.GetName() != "envoy.http_connection_manager":
		r.Errorf(sp, "Envoy filter: subfilter match requires filter match with %s", efHCM)
	case sub.GetName() == "":
		r.Errorf(sp.Field("name"), "Envoy filter: subfilter match has no name to match on")
	default:
		efWarnDeprecatedName(r, sp.Field("name"), sub.GetName())
	}
}

func efWarnDeprecatedName(r *Report, p Path, name string) {
	if repl, ok := efDeprecatedNames[name]; ok && repl != name {
		r.Warnf(p, "using deprecated filter name %q; use %q instead", name, repl)
	}
}

// efCheckOperationContext checks that the operation means something for
// applyTo, and warns (IST0151) when a relative operation is used while the
// EnvoyFilter has no priority.
func efCheckOperationContext(r *Report, p Path, applyTo networking.EnvoyFilter_ApplyTo, op networking.EnvoyFilter_Patch_Operation, priority int32) {
	routeLike := applyTo == networking.EnvoyFilter_ROUTE_CONFIGURATION || applyTo == networking.EnvoyFilter_HTTP_ROUTE
	filterLike := applyTo == networking.EnvoyFilter_HTTP_FILTER || applyTo == networking.EnvoyFilter_NETWORK_FILTER
	relative := false
	switch op {
	case networking.EnvoyFilter_Patch_ADD:
		if routeLike {
			r.WarnCode(p, "IST0153", "the ADD operation is ignored when applyTo is %s", applyTo)
		}
	case networking.EnvoyFilter_Patch_REMOVE:
		if routeLike {
			r.WarnCode(p, "IST0154", "the REMOVE operation is ignored when applyTo is %s", applyTo)
		}
		relative = !routeLike
	case networking.EnvoyFilter_Patch_REPLACE:
		// Istio accepts it everywhere (its analyzer reports IST0152); istiod
		// applies it to filters and virtual hosts only.
		replaceable := filterLike || applyTo == networking.EnvoyFilter_VIRTUAL_HOST || applyTo == networking.EnvoyFilter_LISTENER_FILTER
		if !replaceable {
			r.WarnCode(p, "IST0152", "the REPLACE operation is only applied to HTTP_FILTER, NETWORK_FILTER, LISTENER_FILTER "+
				"and VIRTUAL_HOST patches; for %s it is ignored", applyTo)
		}
		relative = replaceable
	case networking.EnvoyFilter_Patch_INSERT_BEFORE, networking.EnvoyFilter_Patch_INSERT_AFTER, networking.EnvoyFilter_Patch_INSERT_FIRST:
		switch applyTo {
		case networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_NETWORK_FILTER,
			networking.EnvoyFilter_LISTENER_FILTER, networking.EnvoyFilter_HTTP_ROUTE:
		default:
			r.Warnf(p, "the %s operation only orders filters and routes; it has no effect when applyTo is %s", op, applyTo)
		}
		relative = op != networking.EnvoyFilter_Patch_INSERT_FIRST
	}
	if relative && priority == 0 {
		r.WarnCode(p, "IST0151",
			"patch uses the relative operation %s without a priority, so the order in which EnvoyFilters are applied, "+
				"and therefore the result, may be unpredictable; set spec.priority or use INSERT_FIRST or ADD", op)
	}
}
