package gateway

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// parentRank orders the outcomes of one parentRef's listeners: the status
// reports the best one (any listener admitting the route wins).
func parentRank(e *parentError) int {
	if e == nil {
		return 0
	}
	switch e.Reason {
	case reasonNotAllowed:
		return 1
	case reasonNoMatchingHostname:
		return 2
	case reasonNoMatchingParent:
		return 4
	}
	return 0
}

// routeStatus merges the route's outcome into its current parents: one
// entry per parentRef resolved to our listeners, in place when it exists;
// entries of other controllers are kept, stale ones of ours dropped.
func routeStatus(r route, parents []routeParent, errs ruleErrors) []gatewayv1.RouteParentStatus {
	ns := r.cfg.Namespace
	out := slices.Clone(r.current)
	ours := map[string]int{}
	for i, p := range out {
		if string(p.ControllerName) != ControllerName {
			continue
		}
		if rs := parentRefString(p.ParentRef, ns); !hasKey(ours, rs) {
			ours[rs] = i
		}
	}
	type outcome struct {
		ref     gatewayv1.ParentReference
		denied  *parentError
		success int
		mesh    bool
	}
	var order []string
	outcomes := map[string]*outcome{}
	for _, p := range parents {
		k := parentRefString(p.ref, ns)
		o, ok := outcomes[k]
		if !ok {
			o = &outcome{ref: p.ref, denied: copyParentError(p.denied), mesh: p.mesh}
			outcomes[k] = o
			order = append(order, k)
		} else {
			switch rank, best := parentRank(p.denied), parentRank(o.denied); {
			case rank < best:
				o.denied = copyParentError(p.denied)
			case rank == best && o.denied != nil:
				o.denied.Message += "; " + p.denied.Message
			}
		}
		if p.denied == nil {
			o.success++
		}
	}
	var appended []gatewayv1.RouteParentStatus
	for _, k := range order {
		o := outcomes[k]
		routeErr := errs.gateway
		if o.mesh {
			routeErr = errs.mesh
		}
		entry := gatewayv1.RouteParentStatus{
			ParentRef:      o.ref,
			ControllerName: gatewayv1.GatewayController(ControllerName),
			Conditions:     parentConditions(r, k, o.denied, o.success, routeErr),
		}
		if i, ok := ours[k]; ok {
			out[i] = entry
			delete(ours, k)
		} else {
			appended = append(appended, entry)
		}
	}
	slices.SortStableFunc(appended, func(a, b gatewayv1.RouteParentStatus) int {
		return -strings.Compare(parentRefString(a.ParentRef, ns), parentRefString(b.ParentRef, ns))
	})
	out = append(out, appended...)
	stale := map[int]bool{}
	for _, i := range ours {
		stale[i] = true
	}
	kept := make([]gatewayv1.RouteParentStatus, 0, len(out))
	for i, p := range out {
		if !stale[i] {
			kept = append(kept, p)
		}
	}
	return kept
}

// parentConditions are the Accepted and ResolvedRefs conditions of one
// parentRef.
func parentConditions(r route, refKey string, denied *parentError, success int, routeErr *ConfigError) []metav1.Condition {
	msg := "Route was valid"
	if success > 1 {
		msg = fmt.Sprintf("Route was valid, bound to %d parents", success)
	}
	conds := map[string]*condition{
		string(gatewayv1.RouteConditionAccepted):     {reason: string(gatewayv1.RouteReasonAccepted), message: msg},
		string(gatewayv1.RouteConditionResolvedRefs): {reason: string(gatewayv1.RouteReasonResolvedRefs), message: "All references resolved"},
	}
	if routeErr != nil {
		// route errors are all reported as reference errors, as Istio does
		conds[string(gatewayv1.RouteConditionResolvedRefs)].err = routeErr
	}
	if denied != nil {
		conds[string(gatewayv1.RouteConditionAccepted)].err = &ConfigError{Reason: denied.Reason, Message: denied.Message}
	}
	var existing []metav1.Condition
	for _, p := range r.current {
		if string(p.ControllerName) == ControllerName && parentRefString(p.ParentRef, r.cfg.Namespace) == refKey {
			existing = p.Conditions
			break
		}
	}
	return setConditions(r.cfg.Generation, existing, conds)
}

func copyParentError(e *parentError) *parentError {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}
