package envoyfilter

import (
	"fmt"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/diag"
)

// Conflicts reports, for one proxy's patches, the pairs of patches of two
// EnvoyFilters of equal priority that act on the same place and whose
// result depends on which is applied first (beyond Istio, whose analyzer
// only flags relative operations without a priority). The order of such a
// pair is then decided by the namespace rule, the creation time or the
// name: recreating one of the filters can change the result. Pairs whose
// priorities differ are ordered on purpose and not reported.
//
// Order-dependent are: two insertions at the same end of one list (both
// INSERT_FIRST, both ADD) or next to the same filter or route (both
// INSERT_BEFORE it, both INSERT_AFTER it); an insertion, replacement or
// removal of what the other patch anchors on (its sub filter, filter or
// route match); two replacements of the same thing; and two merges into
// the same thing that set a field differently. Where patches may land is
// judged from their matches alone: two matches that name different
// listeners, ports, filter chains, filters, route configurations, virtual
// hosts or clusters never meet; others may.
//
// Each problem is on the later patch and names the earlier one.
func Conflicts(ps *Patches) []Problem {
	if ps.Len() < 2 {
		return nil
	}
	var out []Problem
	for j, b := range ps.all {
		for _, a := range ps.all[:j] {
			if a.filter == b.filter || a.applyTo != b.applyTo || a.filter.Priority != b.filter.Priority ||
				!contextsMeet(a, b) || !targetsMeet(a, b) {
				continue
			}
			if why := orderDependence(a, b); why != "" {
				out = append(out, conflictProblem(ps, a, b, why))
			}
		}
	}
	sortProblems(out)
	return out
}

func conflictProblem(ps *Patches, a, b *patch, why string) Problem {
	decided := "name"
	switch {
	case a.filter.Namespace != b.filter.Namespace:
		decided = "namespace (the root namespace's first)"
	case !a.filter.Created.Equal(b.filter.Created):
		decided = "creation time"
	}
	ctx := b.match.GetContext()
	if ctx == networking.EnvoyFilter_ANY {
		ctx = a.match.GetContext()
	}
	msg := fmt.Sprintf("order-dependent with patch %d of EnvoyFilter %s/%s: %s (applyTo %s, context %s). Both have priority %d, "+
		"so their order is decided by %s, and recreating either can change the result; set spec.priority to order them",
		a.index, a.filter.Namespace, a.filter.Name, why, b.applyTo, ctx, b.filter.Priority, decided)
	return Problem{Severity: diag.Warning, Namespace: b.filter.Namespace, Name: b.filter.Name, Patch: b.index, Message: msg}
}

func contextsMeet(a, b *patch) bool {
	ca, cb := a.match.GetContext(), b.match.GetContext()
	return ca == cb || ca == networking.EnvoyFilter_ANY || cb == networking.EnvoyFilter_ANY
}

// orderDependence says why applying a then b differs from b then a (""
// when it does not), for two patches of one applyTo that may meet.
func orderDependence(a, b *patch) string {
	switch a.applyTo {
	case networking.EnvoyFilter_LISTENER_FILTER, networking.EnvoyFilter_NETWORK_FILTER,
		networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_HTTP_ROUTE:
		return listOrderDependence(a, b)
	case networking.EnvoyFilter_VIRTUAL_HOST:
		if why := replaceOrderDependence(a, b); why != "" {
			return why
		}
	}
	if isMerge(a.op) && isMerge(b.op) {
		return mergeOrderDependence(a, b)
	}
	return ""
}

// position is where a structural list patch acts: at an end, or at (next
// to) the element named anchor.
type position struct {
	kind   string // "first", "last", "before", "after", "replace", "remove", "merge"
	anchor string
}

func listPosition(p *patch) position {
	anchor, has := listAnchor(p)
	switch p.op {
	case networking.EnvoyFilter_Patch_ADD:
		return position{kind: "last"}
	case networking.EnvoyFilter_Patch_INSERT_FIRST:
		return position{kind: "first"}
	case networking.EnvoyFilter_Patch_INSERT_BEFORE:
		if !has {
			return position{kind: "first"}
		}
		return position{kind: "before", anchor: anchor}
	case networking.EnvoyFilter_Patch_INSERT_AFTER:
		if !has {
			return position{kind: "last"}
		}
		return position{kind: "after", anchor: anchor}
	case networking.EnvoyFilter_Patch_REPLACE:
		return position{kind: "replace", anchor: anchor}
	case networking.EnvoyFilter_Patch_REMOVE:
		return position{kind: "remove", anchor: anchor}
	}
	return position{kind: "merge", anchor: anchor}
}

// listAnchor is the element a list patch matches: the listener filter,
// network filter, HTTP filter (sub filter) or route it names.
func listAnchor(p *patch) (string, bool) {
	switch p.applyTo {
	case networking.EnvoyFilter_LISTENER_FILTER:
		n := p.match.GetListener().GetListenerFilter()
		return n, n != ""
	case networking.EnvoyFilter_NETWORK_FILTER:
		return p.filterName, p.hasFilter
	case networking.EnvoyFilter_HTTP_FILTER:
		return p.subFilterName, p.hasSubFilter
	case networking.EnvoyFilter_HTTP_ROUTE:
		return p.match.GetRouteConfiguration().GetVhost().GetRoute().GetName(), hasRouteMatch(p)
	}
	return "", false
}

// valueName is the name of the element a list patch inserts or replaces
// with ("" for REMOVE and MERGE).
func valueName(p *patch) string {
	if p.value == nil || isMerge(p.op) {
		return ""
	}
	if n, ok := p.value.(interface{ GetName() string }); ok {
		return n.GetName()
	}
	return ""
}

func listOrderDependence(a, b *patch) string {
	pa, pb := listPosition(a), listPosition(b)
	// merges of network and HTTP filters run after every structural
	// patch, and route merges before every insertion
	mergesApart := a.applyTo != networking.EnvoyFilter_LISTENER_FILTER
	if pa.kind == "merge" || pb.kind == "merge" {
		if pa.kind == "merge" && pb.kind == "merge" {
			return mergeOrderDependence(a, b)
		}
		if mergesApart {
			return ""
		}
	}
	switch {
	case pa.kind == "first" && pb.kind == "first":
		return "both insert first, so the one applied last ends up in front"
	case pa.kind == "last" && pb.kind == "last":
		return "both append, so the one applied last ends up behind"
	case (pa.kind == "before" || pa.kind == "after") && pa == pb:
		return fmt.Sprintf("both insert %s %q, so their relative order depends on which is applied first", pa.kind, pa.anchor)
	}
	if why := anchorDependence(a, pa, b, pb); why != "" {
		return why
	}
	if why := anchorDependence(b, pb, a, pa); why != "" {
		return why
	}
	if pa.kind == "replace" && pb.kind == "replace" && pa.anchor == pb.anchor && !sameValue(a, b) {
		return fmt.Sprintf("both replace %q, differently", pa.anchor)
	}
	return ""
}

// anchorDependence: x changes what y anchors on (x inserts or replaces
// with an element of y's anchor name, or replaces or removes y's anchor).
func anchorDependence(x *patch, px position, y *patch, py position) string {
	if py.kind == "first" || py.kind == "last" || (py.kind == "merge" && py.anchor == "") {
		return ""
	}
	if vn := valueName(x); vn != "" && vn == py.anchor && !(px.kind == "replace" && px.anchor == vn) {
		return fmt.Sprintf("one adds %q, which the other %s", vn, anchorVerb(py))
	}
	if (px.kind == "replace" || px.kind == "remove") && px.anchor == py.anchor {
		if px.kind == "replace" && valueName(x) == px.anchor && (py.kind == "before" || py.kind == "after") {
			return "" // same position either way
		}
		if px.kind == "remove" && (py.kind == "remove" || py.kind == "merge") {
			return ""
		}
		if px.kind == "remove" && py.kind == "replace" && valueName(y) == px.anchor {
			return ""
		}
		if px.kind == "replace" && py.kind == "replace" {
			return "" // judged by the caller
		}
		return fmt.Sprintf("one %ss %q, which the other %s", px.kind, px.anchor, anchorVerb(py))
	}
	return ""
}

func anchorVerb(p position) string {
	switch p.kind {
	case "before", "after":
		return "inserts " + p.kind
	case "replace":
		return "replaces"
	case "remove":
		return "removes"
	}
	return "merges into"
}

// replaceOrderDependence covers VIRTUAL_HOST REPLACE against the other
// operations on the same host.
func replaceOrderDependence(a, b *patch) string {
	ra, rb := a.op == networking.EnvoyFilter_Patch_REPLACE, b.op == networking.EnvoyFilter_Patch_REPLACE
	switch {
	case ra && rb:
		if !sameValue(a, b) {
			return "both replace the virtual host, differently"
		}
	case ra && isMerge(b.op), rb && isMerge(a.op):
		return "one replaces the virtual host the other merges into: merged first, the merge is lost"
	case ra && b.op == networking.EnvoyFilter_Patch_REMOVE, rb && a.op == networking.EnvoyFilter_Patch_REMOVE:
		rep, rem := a, b
		if rb {
			rep, rem = b, a
		}
		if n := rem.match.GetRouteConfiguration().GetVhost().GetName(); n != valueName(rep) {
			return "one replaces the virtual host (renaming it) the other removes"
		}
	}
	return ""
}
