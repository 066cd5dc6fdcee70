package gateway

import (
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("gateway", "Gateway API translation")

// problemSource is the /debug/warningz source of Gateway API problems.
const problemSource = "gateway-api"

// failed reports whether a condition says something is wrong: any False
// condition except Conflicted, and Conflicted True.
func failed(c metav1.Condition) bool {
	if c.Type == string(gatewayv1.ListenerConditionConflicted) {
		return c.Status == metav1.ConditionTrue
	}
	return c.Status == metav1.ConditionFalse
}

func conditionProblems(object, field string, conds []metav1.Condition) []diag.Problem {
	var out []diag.Problem
	for _, c := range conds {
		if failed(c) {
			out = append(out, diag.Problem{Severity: diag.Warning, Object: object, Field: field,
				Message: fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)})
		}
	}
	return out
}

// StatusProblems lists what the status of an object reports as wrong: a
// Gateway not accepted or programmed, a listener refused or in conflict, a
// route parent that refused the route or references that do not resolve.
func StatusProblems(s ObjectStatus) []diag.Problem {
	object := s.Kind.Kind + " " + s.Namespace + "/" + s.Name
	var parents []gatewayv1.RouteParentStatus
	switch st := s.Status.(type) {
	case *gatewayv1.GatewayClassStatus:
		return conditionProblems(s.Kind.Kind+" "+s.Name, "status.conditions", st.Conditions)
	case *gatewayv1.GatewayStatus:
		out := conditionProblems(object, "status.conditions", st.Conditions)
		for _, l := range st.Listeners {
			out = append(out, conditionProblems(object, "status.listeners["+string(l.Name)+"]", l.Conditions)...)
		}
		return out
	case *gatewayv1.HTTPRouteStatus:
		parents = st.Parents
	case *gatewayv1.GRPCRouteStatus:
		parents = st.Parents
	case *gatewayv1alpha2.TCPRouteStatus:
		parents = st.Parents
	case *gatewayv1.TLSRouteStatus:
		parents = st.Parents
	}
	var out []diag.Problem
	for _, p := range parents {
		if string(p.ControllerName) != ControllerName {
			continue
		}
		out = append(out, conditionProblems(object, "status.parents["+parentRefString(p.ParentRef, s.Namespace)+"]", p.Conditions)...)
	}
	return out
}

// reportProblems keeps the problems of every status on board, and logs
// each object's problems at WARN when they change.
func reportProblems(statuses krt.Collection[ObjectStatus], board *diag.Board) krt.HandlerRegistration {
	var mu sync.Mutex
	last := map[string][]string{}
	return statuses.Register(func(e krt.Event[ObjectStatus]) {
		s := e.Latest()
		subject := s.ResourceName()
		var problems []diag.Problem
		if e.Event != krt.EventDelete {
			problems = StatusProblems(s)
		}
		board.Report(problemSource, subject, problems)
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Field + " " + p.Message
		}
		mu.Lock()
		changed := !slices.Equal(last[subject], msgs)
		if len(msgs) == 0 {
			delete(last, subject)
		} else {
			last[subject] = msgs
		}
		mu.Unlock()
		if changed {
			for _, p := range problems {
				scope.Warnf("%s %s: %s", p.Object, p.Field, p.Message)
			}
		}
	})
}
