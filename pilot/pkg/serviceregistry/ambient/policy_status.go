package ambient

import (
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	istiometa "istio.io/api/meta/v1alpha1"
	securityapi "istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// This file computes the conditions Istio writes on AuthorizationPolicies in
// ambient mode, saying where each applies: ZtunnelAccepted for a policy
// ztunnel enforces (or refuses), WaypointAccepted for one bound by
// targetRefs to a waypoint.

// The condition types and reasons Istio writes.
const (
	ConditionZtunnelAccepted  = "ZtunnelAccepted"
	ConditionWaypointAccepted = "WaypointAccepted"

	reasonAccepted         = "Accepted"
	reasonUnsupportedValue = "UnsupportedValue"
	reasonInvalid          = "Invalid"
	reasonPartiallyInvalid = "PartiallyInvalid"
	reasonAncestorNotBound = "AncestorNotBound"
	reasonTargetNotFound   = "TargetNotFound"

	meshControllerName = "istio.io/mesh-controller"
)

// PolicyStatus is the status one AuthorizationPolicy should carry: the
// status it has, with the ZtunnelAccepted and WaypointAccepted conditions
// set to what applies now (and removed when they do not). A condition that
// is new or changed has no lastTransitionTime: the status writer stamps it.
// Status is immutable once in the collection.
type PolicyStatus struct {
	Namespace, Name string
	// Generation is the policy's generation the status was computed for.
	Generation int64
	Status     *istiometa.IstioStatus
}

// ResourceName keys the status by namespace/name.
func (p PolicyStatus) ResourceName() string { return p.Namespace + "/" + p.Name }

// Equals compares content (krt change detection).
func (p PolicyStatus) Equals(o PolicyStatus) bool {
	return p.Namespace == o.Namespace && p.Name == o.Name && p.Generation == o.Generation && proto.Equal(p.Status, o.Status)
}

// PolicyStatuses builds the collection of the status of every
// AuthorizationPolicy, following the policies, waypoints, Services,
// ServiceEntries, GatewayClasses and the mesh config. Each call builds a
// new collection: call it once, and only when the status is written
// (AMBIENT_ENABLE_STATUS).
func (x *Index) PolicyStatuses() krt.Collection[PolicyStatus] {
	return krt.NewCollection(x.in.AuthorizationPolicies, x.buildPolicyStatus, x.krtOpts("ambient/policy-status")...)
}

// policyCondition is one condition to set; nil removes the type.
type policyCondition struct {
	status  bool
	reason  string
	message string
}

func (x *Index) buildPolicyStatus(ctx krt.HandlerContext, cfg config.Config) *PolicyStatus {
	spec, _ := cfg.Spec.(*securityapi.AuthorizationPolicy)
	if spec == nil {
		return nil
	}
	mesh := x.fetchMesh(ctx)
	conds := map[string]*policyCondition{
		ConditionZtunnelAccepted:  ztunnelCondition(mesh.RootNamespace, cfg, spec),
		ConditionWaypointAccepted: nil,
	}
	if refs := targetRefsOf(spec); len(refs) > 0 {
		bindings := make([]policyBinding, 0, len(refs))
		for _, ref := range refs {
			bindings = append(bindings, x.bindTarget(ctx, mesh, cfg.Namespace, ref))
		}
		conds[ConditionWaypointAccepted] = flattenBindings(bindings)
	}
	cur, _ := cfg.Status.(*istiometa.IstioStatus)
	return &PolicyStatus{Namespace: cfg.Namespace, Name: cfg.Name, Generation: cfg.Generation,
		Status: mergePolicyConditions(cur, cfg.Generation, conds)}
}

// ztunnelCondition is ZtunnelAccepted: True when ztunnel enforces the
// policy (UnsupportedValue when it drops HTTP rules), False when it
// refuses it, nil for a policy bound by targetRefs.
func ztunnelCondition(root string, cfg config.Config, spec *securityapi.AuthorizationPolicy) *policyCondition {
	pol, msg := convertAuthorizationPolicy(root, cfg, spec)
	switch {
	case pol == nil && msg == "":
		return nil
	case msg == "":
		return &policyCondition{status: true, reason: reasonAccepted, message: "attached to ztunnel"}
	}
	return &policyCondition{status: pol != nil, reason: reasonUnsupportedValue, message: msg}
}

// targetRefsOf is targetRefs, else the deprecated targetRef.
func targetRefsOf(spec *securityapi.AuthorizationPolicy) []*typeapi.PolicyTargetReference {
	if len(spec.GetTargetRefs()) > 0 {
		return spec.GetTargetRefs()
	}
	if spec.GetTargetRef() != nil {
		return []*typeapi.PolicyTargetReference{spec.GetTargetRef()}
	}
	return nil
}

// policyBinding is whether one targetRef binds the policy to a waypoint.
type policyBinding struct {
	// ancestor names the target: <Kind>.<group or core>:<namespace>/<name>.
	ancestor        string
	bound           bool
	reason, message string
}

// bindTarget resolves one targetRef as Istio does: a waypoint Gateway, a
// Service or ServiceEntry that uses a waypoint, or (from the root
// namespace) the waypoint GatewayClass.
func (x *Index) bindTarget(ctx krt.HandlerContext, mesh MeshSettings, policyNS string, ref *typeapi.PolicyTargetReference) policyBinding {
	ns := policyNS
	if ref.GetNamespace() != "" {
		ns = ref.GetNamespace()
	}
	key := ns + "/" + ref.GetName()
	group := ref.GetGroup()
	if group == "" {
		group = "core"
	}
	b := policyBinding{ancestor: ref.GetKind() + "." + group + ":" + key, reason: "unknown", message: "not bound"}
	accept := func(what string) {
		b.bound, b.reason, b.message = true, reasonAccepted, "bound to "+what
	}
	switch ref.GetKind() {
	case "GatewayClass":
		if ns != mesh.RootNamespace {
			b.reason = reasonInvalid
			b.message = fmt.Sprintf("AuthorizationPolicy must be in the root namespace `%s` when referencing a GatewayClass", mesh.RootNamespace)
			break
		}
		class := krt.FetchOne(ctx, x.in.GatewayClasses, krt.FilterKey(ref.GetName()))
		switch {
		case class == nil:
			b.reason = reasonTargetNotFound
		case classController(*class) != meshControllerName:
			b.reason = reasonInvalid
			b.message = fmt.Sprintf("GatewayClass must use controller name `%s` for waypoints", meshControllerName)
		default:
			accept(class.Name)
		}
	case "Gateway":
		if w := krt.FetchOne(ctx, x.waypoints, krt.FilterKey(key)); w != nil {
			accept(w.ResourceName())
		} else {
			b.reason = reasonTargetNotFound
		}
	case "Service":
		svc := krt.FetchOne(ctx, x.in.Services, krt.FilterKey(key))
		if svc == nil {
			b.reason, b.message = reasonTargetNotFound, fmt.Sprintf("Service %s was not found", key)
			break
		}
		if w := x.waypointForService(ctx, ns, (*svc).Labels); w != nil {
			accept(w.ResourceName())
		} else {
			b.reason, b.message = reasonAncestorNotBound, fmt.Sprintf("Service %s is not bound to a waypoint", key)
		}
	case "ServiceEntry":
		se := krt.FetchOne(ctx, x.in.ServiceEntries, krt.FilterKey(key))
		if se == nil {
			b.reason, b.message = reasonTargetNotFound, fmt.Sprintf("ServiceEntry %s was not found", key)
			break
		}
		if w := x.waypointForService(ctx, ns, se.Labels); w != nil {
			accept(w.ResourceName())
		} else {
			b.reason, b.message = reasonAncestorNotBound, fmt.Sprintf("ServiceEntry %s is not bound to a waypoint", key)
		}
	}
	return b
}

func classController(c config.Config) string {
	if spec, ok := c.Spec.(*gatewayv1.GatewayClassSpec); ok && spec != nil {
		return string(spec.ControllerName)
	}
	return ""
}

// flattenBindings folds the targetRefs into the one WaypointAccepted
// condition Istio writes: a single target's as it is; several are bound
// when any is (PartiallyInvalid when some are not, Invalid when none is),
// with the unbound ones listed.
func flattenBindings(bs []policyBinding) *policyCondition {
	if len(bs) == 1 {
		return &policyCondition{status: bs[0].bound, reason: bs[0].reason, message: bs[0].message}
	}
	out := &policyCondition{reason: reasonInvalid}
	var unbound []string
	for _, b := range bs {
		if b.bound {
			out.status = true
		} else {
			unbound = append(unbound, b.ancestor)
		}
	}
	if out.status {
		out.reason = reasonAccepted
		if len(unbound) > 0 {
			out.reason = reasonPartiallyInvalid
		}
	}
	if len(unbound) > 0 {
		out.message = "Invalid targetRefs: " + strings.Join(unbound, ", ")
	}
	return out
}

// mergePolicyConditions is cur (not modified) with the conditions of conds
// set: an unchanged one (status, reason, message, generation) is kept as it
// is, a changed or new one has no lastTransitionTime, a nil one is
// removed; conditions of other types are kept.
func mergePolicyConditions(cur *istiometa.IstioStatus, generation int64, conds map[string]*policyCondition) *istiometa.IstioStatus {
	out := &istiometa.IstioStatus{}
	if cur != nil {
		out = proto.Clone(cur).(*istiometa.IstioStatus)
	}
	kept := out.Conditions[:0:0]
	seen := map[string]bool{}
	for _, c := range out.Conditions {
		want, ours := conds[c.Type]
		switch {
		case !ours:
			kept = append(kept, c)
		case want == nil || seen[c.Type]:
			// removed, or a duplicate
		default:
			seen[c.Type] = true
			kept = append(kept, conditionFor(c, c.Type, generation, want))
		}
	}
	for _, t := range []string{ConditionZtunnelAccepted, ConditionWaypointAccepted} {
		if want := conds[t]; want != nil && !seen[t] {
			kept = append(kept, conditionFor(nil, t, generation, want))
		}
	}
	out.Conditions = kept
	return out
}

// conditionFor is the condition of type t: cur when it already says want.
func conditionFor(cur *istiometa.IstioCondition, t string, generation int64, want *policyCondition) *istiometa.IstioCondition {
	status := "False"
	if want.status {
		status = "True"
	}
	if cur != nil && cur.Status == status && cur.Reason == want.reason && cur.Message == want.message &&
		cur.ObservedGeneration == generation {
		return cur
	}
	return &istiometa.IstioCondition{Type: t, Status: status, Reason: want.reason, Message: want.message,
		ObservedGeneration: generation}
}

// PolicyProblemSource is the /debug/warningz source of the policies'
// status problems.
const PolicyProblemSource = "ambient-policy"

// PolicyProblems lists what a policy's status reports as wrong: a
// ZtunnelAccepted or WaypointAccepted condition that is False (ztunnel
// refuses the policy, a targetRef binds to no waypoint), and ztunnel
// enforcing a policy without its HTTP rules.
func PolicyProblems(p PolicyStatus) []diag.Problem {
	var out []diag.Problem
	for _, c := range p.Status.GetConditions() {
		if c.Type != ConditionZtunnelAccepted && c.Type != ConditionWaypointAccepted {
			continue
		}
		if c.Status == "False" || c.Reason == reasonUnsupportedValue || c.Reason == reasonPartiallyInvalid {
			out = append(out, diag.Problem{Severity: diag.Warning, Source: PolicyProblemSource, Subject: p.ResourceName(),
				Object: "AuthorizationPolicy " + p.ResourceName(), Field: "status.conditions[" + c.Type + "]",
				Message: fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)})
		}
	}
	return out
}

// ReportPolicyProblems keeps the problems of every policy status on board
// (and logs them at WARN when they change) until statuses stops.
func ReportPolicyProblems(statuses krt.Collection[PolicyStatus], board *diag.Board) krt.HandlerRegistration {
	var mu sync.Mutex
	last := map[string]string{}
	return statuses.Register(func(e krt.Event[PolicyStatus]) {
		p := e.Latest()
		var problems []diag.Problem
		if e.Event != krt.EventDelete {
			problems = PolicyProblems(p)
		}
		board.Report(PolicyProblemSource, p.ResourceName(), problems)
		msgs := make([]string, len(problems))
		for i, pr := range problems {
			msgs[i] = pr.Message
		}
		joined := strings.Join(msgs, "\n")
		mu.Lock()
		changed := last[p.ResourceName()] != joined
		if joined == "" {
			delete(last, p.ResourceName())
		} else {
			last[p.ResourceName()] = joined
		}
		mu.Unlock()
		if changed {
			for _, pr := range problems {
				scope.Warnf("%s: %s", pr.Object, pr.Message)
			}
		}
	})
}
