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

// ValidateEnvoyFilter checks an EnvoyFilter. Patches that use a relative
// operation while the filter has no priority get an IST0151 warning.
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
	if ef.GetWorkloadSelector() != nil && len(ef.GetTargetRefs()) > 0 {
		r.Errorf(spec, "only one of targetRefs or workloadSelector can be set")
	}
	netCheckAlphaSelector(r, spec.Field("workloadSelector"), ef.GetWorkloadSelector(), "Envoy filter")
	for i, ref := range ef.GetTargetRefs() {
		rp := spec.Field("targetRefs").Index(i)
		if ref == nil {
			r.Errorf(rp, "targetRef may not be null")
			continue
		}
		if ref.GetName() == "" {
			r.Errorf(rp.Field("name"), "targetRef name must be set")
		}
		if ref.GetKind() == "" {
			r.Errorf(rp.Field("kind"), "targetRef kind must be set")
		}
		if ref.GetNamespace() != "" {
			r.Errorf(rp.Field("namespace"), "targetRef namespace must not be set; cross namespace referencing is not supported")
		}
	}
	for i, cp := range ef.GetConfigPatches() {
		efCheckPatch(r, spec.Field("configPatches").Index(i), cp, ef.GetPriority())
	}
	return r.Result()
}

// efCheckPatch validates one config patch: applyTo, operation, value and
// the match, and flags relative operations without priority.
func efCheckPatch(r *Report, p Path, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch, priority int32) {
	if cp == nil {
		r.Errorf(p, "Envoy filter: null config patch")
		return
	}
	applyTo := cp.GetApplyTo()
	_, applyOK := networking.EnvoyFilter_ApplyTo_name[int32(applyTo)]
	applyOK = applyOK && applyTo != networking.EnvoyFilter_INVALID
	if !applyOK {
		r.Errorf(p.Field("applyTo"), "Envoy filter: missing or unknown applyTo")
	}
	if pv := cp.GetMatch().GetProxy().GetProxyVersion(); pv != "" {
		if _, err := regexp.Compile(pv); err != nil {
			r.Errorf(p.Field("match").Field("proxy").Field("proxyVersion"), "Envoy filter: invalid regex for proxy version: %v", err)
		}
	}
	if applyOK {
		efCheckMatch(r, p.Field("match"), cp)
	}
	pp := p.Field("patch")
	if cp.GetPatch() == nil {
		r.Errorf(pp, "Envoy filter: missing patch")
		return
	}
	op := cp.GetPatch().GetOperation()
	if _, known := networking.EnvoyFilter_Patch_Operation_name[int32(op)]; !known || op == networking.EnvoyFilter_Patch_INVALID {
		r.Errorf(pp.Field("operation"), "Envoy filter: missing or unknown patch operation")
		return
	}
	switch {
	case op == networking.EnvoyFilter_Patch_REMOVE && cp.GetPatch().GetValue() != nil:
		r.Warnf(pp.Field("value"), "Envoy filter: patch value is ignored for the REMOVE operation")
	case op != networking.EnvoyFilter_Patch_REMOVE && cp.GetPatch().GetValue() == nil:
		r.Errorf(pp.Field("value"), "Envoy filter: missing patch value for %s operation", op)
	}
	if applyOK {
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
	case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_FILTER_CHAIN,
		networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_LISTENER_FILTER:
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
		r.Errorf(sp, "Envoy filter: subFilter match can be used with applyTo HTTP_FILTER only")
	case f.GetName() != efHCM && f.GetName() != "envoy.http_connection_manager":
		r.Errorf(sp, "Envoy filter: subFilter match requires filter match with %s", efHCM)
	case sub.GetName() == "":
		r.Errorf(sp.Field("name"), "Envoy filter: subFilter match has no name to match on")
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
		if !filterLike {
			r.Errorf(p, "IST0152 the REPLACE operation is only valid for HTTP_FILTER and NETWORK_FILTER, not %s", applyTo)
		}
		relative = filterLike
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
