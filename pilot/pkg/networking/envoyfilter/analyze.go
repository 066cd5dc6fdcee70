package envoyfilter

import (
	"cmp"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/diag"
)

// The messages istioctl analyze (Istio 1.31) reports for EnvoyFilters, with
// its codes, so that users can search them.
const (
	msgSchemaWarning = "Schema validation warning: "
	msgInternal      = "EnvoyFilter exposes internal implementation details that may change at any time. " +
		"Prefer other APIs if possible, and exercise extreme caution, especially around upgrades."
	msgRelative = "This EnvoyFilter does not have a priority and has a relative patch operation set which can cause " +
		"the EnvoyFilter not to be applied. Using the INSERT_FIRST of ADD option or setting the priority may help in " +
		"ensuring the EnvoyFilter is applied correctly."
	msgReplace         = "The REPLACE operation is only valid for HTTP_FILTER and NETWORK_FILTER."
	msgAdd             = "The ADD operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE."
	msgRemove          = "The REMOVE operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE."
	msgRelativeVersion = "This EnvoyFilter does not have a priority and has a relative patch operation " +
		"(NSTERT_BEFORE/AFTER, REPLACE, MERGE, DELETE) and proxyVersion set which can cause the EnvoyFilter not to be " +
		"applied during an upgrade. Using the INSERT_FIRST or ADD option or setting the priority may help in ensuring " +
		"the EnvoyFilter is applied correctly."
)

// Analysis codes.
const (
	CodeSchemaWarning            = "IST0133"
	CodeRelativeOperation        = "IST0151"
	CodeReplaceIncorrectly       = "IST0152"
	CodeAddIncorrectly           = "IST0153"
	CodeRemoveIncorrectly        = "IST0154"
	CodeRelativeWithProxyVersion = "IST0155"
)

// Analyze reports what istioctl analyze reports for these EnvoyFilters (the
// configs of other kinds are ignored):
//
//   - IST0133 for each schema validation warning: the warning every
//     EnvoyFilter gets, and the unknown fields of patch values (which
//     istiod drops);
//   - what its envoyfilter.EnvoyPatchAnalyzer reports: IST0153 and IST0154
//     for ADD and REMOVE on ROUTE_CONFIGURATION or HTTP_ROUTE, IST0152 for
//     REPLACE outside HTTP_FILTER, NETWORK_FILTER and VIRTUAL_HOST, and,
//     in a filter without a priority, IST0151 for the relative operations
//     REMOVE, REPLACE, INSERT_BEFORE and INSERT_AFTER (not MERGE), or
//     IST0155 instead when a patch seen before, with a proxyVersion match,
//     names the same filter (its value's name, or the network filter it
//     matches).
//
// Like the analyzer, it stops reading a filter's patches at the first one
// without a patch, and reports what it reports even where istiod does
// apply the patch (an HTTP_ROUTE ADD or REMOVE). The analyzer's IST0155
// depends on the order it visits filters in; Analyze visits them by
// namespace, then name. The levels are Istio's: IST0152 to IST0154 are
// errors, the others warnings.
func Analyze(configs []config.Config) []Problem {
	var filters []config.Config
	for _, c := range configs {
		if _, ok := c.Spec.(*networking.EnvoyFilter); ok {
			filters = append(filters, c)
		}
	}
	slices.SortStableFunc(filters, func(a, b config.Config) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var out []Problem
	var versioned []string // instance names of patches with a proxyVersion match
	for _, c := range filters {
		out = append(out, schemaWarnings(c)...)
		var ps []Problem
		ps, versioned = analyzePatches(c, versioned)
		out = append(out, ps...)
	}
	return out
}

func analysisProblem(c config.Config, sev diag.Severity, code string, index int, msg string) Problem {
	return Problem{Severity: sev, Code: code, Namespace: c.Namespace, Name: c.Name, Patch: index, Message: msg}
}

// schemaWarnings are the IST0133 messages of one filter.
func schemaWarnings(c config.Config) []Problem {
	out := []Problem{analysisProblem(c, diag.Warning, CodeSchemaWarning, -1, msgSchemaWarning+msgInternal)}
	for i, cp := range c.Spec.(*networking.EnvoyFilter).GetConfigPatches() {
		if cp.GetPatch().GetValue() == nil {
			continue
		}
		if _, strictErr, err := decodeValue(cp.GetApplyTo(), cp.GetPatch().GetValue()); err == nil && strictErr != nil {
			out = append(out, analysisProblem(c, diag.Warning, CodeSchemaWarning, i, msgSchemaWarning+"Envoy filter: "+strictErr.Error()))
		}
	}
	return out
}

// analyzePatches is the EnvoyPatchAnalyzer on one filter; versioned carries
// the instance names of the patches with a proxyVersion match seen so far.
func analyzePatches(c config.Config, versioned []string) ([]Problem, []string) {
	ef := c.Spec.(*networking.EnvoyFilter)
	var out []Problem
	relative := func(i int, name string) {
		if ef.GetPriority() != 0 {
			return
		}
		if slices.Contains(versioned, name) {
			out = append(out, analysisProblem(c, diag.Warning, CodeRelativeWithProxyVersion, i, msgRelativeVersion))
			return
		}
		out = append(out, analysisProblem(c, diag.Warning, CodeRelativeOperation, i, msgRelative))
	}
	for i, cp := range ef.GetConfigPatches() {
		if cp.GetPatch() == nil {
			break
		}
		name := instanceName(cp)
		routeLike := cp.GetApplyTo() == networking.EnvoyFilter_ROUTE_CONFIGURATION || cp.GetApplyTo() == networking.EnvoyFilter_HTTP_ROUTE
		switch cp.GetPatch().GetOperation() {
		case networking.EnvoyFilter_Patch_ADD:
			if routeLike {
				out = append(out, analysisProblem(c, diag.Error, CodeAddIncorrectly, i, msgAdd))
			}
		case networking.EnvoyFilter_Patch_REMOVE:
			if routeLike {
				out = append(out, analysisProblem(c, diag.Error, CodeRemoveIncorrectly, i, msgRemove))
			} else {
				relative(i, name)
			}
		case networking.EnvoyFilter_Patch_REPLACE:
			switch cp.GetApplyTo() {
			case networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_VIRTUAL_HOST:
				relative(i, name)
			default:
				out = append(out, analysisProblem(c, diag.Error, CodeReplaceIncorrectly, i, msgReplace))
			}
		case networking.EnvoyFilter_Patch_INSERT_BEFORE, networking.EnvoyFilter_Patch_INSERT_AFTER:
			relative(i, name)
		}
		if cp.GetMatch().GetProxy().GetProxyVersion() != "" {
			versioned = append(versioned, name)
		}
	}
	return out, versioned
}

// instanceName is what the analyzer compares patches by: the value's name
// field when it has one (as a value, so it never equals a plain filter
// name), else the name of the network filter the patch matches, else "".
func instanceName(cp *networking.EnvoyFilter_EnvoyConfigObjectPatch) string {
	fields := cp.GetPatch().GetValue().GetFields()
	if fields == nil {
		return ""
	}
	if n, ok := fields["name"]; ok && n != nil {
		b, _ := protojson.Marshal(n)
		return "\x00value " + string(b)
	}
	if fc := cp.GetMatch().GetListener().GetFilterChain(); fc != nil {
		return fc.GetFilter().GetName()
	}
	return ""
}
