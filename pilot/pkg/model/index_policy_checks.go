package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	meshconfig "istio.io/api/mesh/v1alpha1"
	security "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// This file checks the security policies of a snapshot for what Istio 1.31
// accepts and then silently ignores, in whole or in part, so that
// /debug/warningz names the object, the field and the reason:
//
//   - PolicyCheckNoWorkload: a PeerAuthentication, RequestAuthentication or
//     AuthorizationPolicy whose selector matches no workload.
//   - PolicyCheckPortLevelIgnored: portLevelMtls on a PeerAuthentication
//     without a selector (Istio reads port-level modes from workload
//     policies only).
//   - PolicyCheckRootSelector: a PeerAuthentication with a selector in the
//     root namespace (it applies to no workload).
//   - PolicyCheckShadowed: a namespace-wide (or mesh-wide) PeerAuthentication
//     that is not the oldest of its namespace (only the oldest applies).
//   - PolicyCheckUnknownProvider: a CUSTOM AuthorizationPolicy naming a
//     provider that is not an envoyExtAuthzHttp/Grpc extension provider of
//     the mesh config (its workloads deny what its rules match).
//   - PolicyCheckUnsupportedKey: an AuthorizationPolicy when key Istio does
//     not know (Istio drops the rule).
//
// Workloads are what the endpoint index knows: the endpoints of services,
// with their workloads' labels and namespaces. A workload no service (or
// ServiceEntry) selects is invisible here, so a policy selecting only such
// workloads is reported although it applies; the message says so. The
// endpoint index is live, unlike the snapshot: the workload check is
// redone whenever endpoints changed since it last ran.
//
// The checks are not a PushContext index (push_context_indexes.go): they run
// on demand, at most once per set of inputs — the three policy indexes, the
// mesh config and the endpoint index — and snapshots sharing those share
// the result. Reading them (PushContext.PolicyProblems) logs new problems at
// WARN and sets the istiod_policy_ignored gauge. They are not listed on
// /debug/push_status.

// Policy check names: PolicyProblem.Check and the check label of the
// istiod_policy_ignored gauge.
const (
	PolicyCheckNoWorkload       = "selector_matches_no_workload"
	PolicyCheckPortLevelIgnored = "port_level_mtls_without_selector"
	PolicyCheckRootSelector     = "peer_authentication_selector_in_root_namespace"
	PolicyCheckShadowed         = "peer_authentication_not_oldest"
	PolicyCheckUnknownProvider  = "custom_provider_not_ext_authz"
	PolicyCheckUnsupportedKey   = "unsupported_when_key"
)

var policyCheckNames = []string{
	PolicyCheckNoWorkload, PolicyCheckPortLevelIgnored, PolicyCheckRootSelector,
	PolicyCheckShadowed, PolicyCheckUnknownProvider, PolicyCheckUnsupportedKey,
}

// PolicyProblem is one security policy, or one field of it, that Istio
// ignores.
type PolicyProblem struct {
	Check     string `json:"check"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Field is the path of the ignored field (spec.portLevelMtls,
	// spec.rules[0].when[1].key); empty for the whole object.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Since is when the problem was first seen.
	Since time.Time `json:"since"`
}

// Object names the policy as /debug/warningz does: "<Kind> <ns>/<name>".
func (pp PolicyProblem) Object() string { return pp.Kind + " " + pp.Namespace + "/" + pp.Name }

func (pp PolicyProblem) identity() string {
	return pp.Check + "\x00" + pp.Object() + "\x00" + pp.Field + "\x00" + pp.Message
}

// Diag is the problem as the board lists it.
func (pp PolicyProblem) Diag() diag.Problem {
	return diag.Problem{Severity: diag.Warning, Source: "policy", Subject: pp.Object(), Object: pp.Object(),
		Field: pp.Field, Message: pp.Message, Since: pp.Since}
}

// PolicyProblemSource returns a diag.Board provider listing the policy
// problems of the snapshot current returns (nothing while it returns nil).
func PolicyProblemSource(current func() *PushContext) func() []diag.Problem {
	return func() []diag.Problem {
		ps := current().PolicyProblems()
		out := make([]diag.Problem, len(ps))
		for i, pp := range ps {
			out[i] = pp.Diag()
		}
		return out
	}
}

// PolicyProblems returns what the checks of this file find in the
// snapshot's policies, sorted by kind, namespace, name, field and check.
// The result is shared: read-only. Safe for concurrent use; nil for a nil
// snapshot.
func (p *PushContext) PolicyProblems() []PolicyProblem {
	if p == nil {
		return nil
	}
	return policyChecks.get(p)
}

var (
	authzLog = log.RegisterScope("authorization", "authorization and authentication policy")

	policyIgnoredGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "istiod_policy_ignored",
		Help: "Security policies (or fields of them) that Istio ignores, by check, as last computed.",
	}, []string{"check"})

	// policyChecks remembers the last result: the current snapshot is the
	// one read, so one entry is enough.
	policyChecks policyCheckMemo
)

func init() { monitoring.MustRegister(policyIgnoredGauge) }

// policyCheckInputs identify what the checks read from a snapshot.
type policyCheckInputs struct {
	pa, ra, ap *policyIndex
	mesh       *meshconfig.MeshConfig
	eps        *EndpointIndex
}

type policyCheckMemo struct {
	mu        sync.Mutex
	inputs    policyCheckInputs
	epVersion uint64
	valid     bool
	static    []PolicyProblem // from the policies and the mesh config
	all       []PolicyProblem
	since     map[string]time.Time
}

func (m *policyCheckMemo) get(p *PushContext) []PolicyProblem {
	in := policyCheckInputs{pa: p.peerAuthentications, ra: p.requestAuthentications, ap: p.authorizationPolicies, mesh: p.Mesh}
	if p.env != nil {
		in.eps = p.env.EndpointIndex()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	version := shardVersions.Load()
	sameInputs := m.valid && m.inputs == in
	if sameInputs && (in.eps == nil || m.epVersion == version) {
		return m.all
	}
	if !sameInputs {
		m.static = staticPolicyChecks(in, p.rootNamespace)
	}
	found := append(slices.Clone(m.static), workloadPolicyChecks(in, p.rootNamespace)...)
	sortPolicyProblems(found)
	m.record(found)
	m.inputs, m.epVersion, m.valid = in, version, true
	return m.all
}

// record stamps first-seen times, logs new problems and sets the gauge.
func (m *policyCheckMemo) record(found []PolicyProblem) {
	since := make(map[string]time.Time, len(found))
	counts := map[string]int{}
	now := time.Now()
	for i := range found {
		id := found[i].identity()
		t, seen := m.since[id]
		if !seen {
			t = now
			authzLog.Warnf("%s: %s%s", found[i].Object(), fieldPrefix(found[i].Field), found[i].Message)
		}
		found[i].Since, since[id] = t, t
		counts[found[i].Check]++
	}
	for _, c := range policyCheckNames {
		policyIgnoredGauge.WithLabelValues(c).Set(float64(counts[c]))
	}
	m.since, m.all = since, found
}

func fieldPrefix(f string) string {
	if f == "" {
		return ""
	}
	return f + ": "
}

func sortPolicyProblems(ps []PolicyProblem) {
	slices.SortFunc(ps, func(a, b PolicyProblem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Field, b.Field), cmp.Compare(a.Check, b.Check), cmp.Compare(a.Message, b.Message))
	})
}

func policyProblem(check string, cfg *config.Config, field, format string, args ...any) PolicyProblem {
	return PolicyProblem{Check: check, Kind: cfg.GroupVersionKind.Kind, Namespace: cfg.Namespace, Name: cfg.Name,
		Field: field, Message: fmt.Sprintf(format, args...)}
}

// eachPolicy calls f for every policy of x, namespace by namespace (sorted),
// oldest first.
func eachPolicy(x *policyIndex, f func(cfg *config.Config)) {
	if x == nil {
		return
	}
	for _, ns := range slices.Sorted(maps.Keys(x.byNamespace)) {
		for i := range x.byNamespace[ns] {
			f(&x.byNamespace[ns][i])
		}
	}
}

// staticPolicyChecks are the checks that read policies and the mesh
// config only.
func staticPolicyChecks(in policyCheckInputs, root string) []PolicyProblem {
	var out []PolicyProblem
	oldest := map[string]*config.Config{} // namespace → its oldest namespace-wide PeerAuthentication
	eachPolicy(in.pa, func(cfg *config.Config) {
		spec, ok := cfg.Spec.(*security.PeerAuthentication)
		if !ok {
			return
		}
		selector := len(spec.GetSelector().GetMatchLabels()) > 0
		switch {
		case selector && cfg.Namespace == root:
			out = append(out, policyProblem(PolicyCheckRootSelector, cfg, "spec.selector",
				"a PeerAuthentication with a selector in the root namespace %s applies to no workload: Istio ignores it "+
					"(drop the selector for a mesh-wide policy, or move it to the namespace of the workloads)", root))
		case !selector:
			scope := "namespace-wide"
			if cfg.Namespace == root {
				scope = "mesh-wide"
			}
			if len(spec.GetPortLevelMtls()) > 0 {
				out = append(out, policyProblem(PolicyCheckPortLevelIgnored, cfg, "spec.portLevelMtls",
					"portLevelMtls is ignored on a %s PeerAuthentication: Istio applies port-level modes only from a policy with a selector", scope))
			}
			if first, ok := oldest[cfg.Namespace]; ok {
				out = append(out, policyProblem(PolicyCheckShadowed, cfg, "",
					"namespace %s has more than one %s PeerAuthentication: Istio applies only the oldest, %s/%s, and ignores this one",
					cfg.Namespace, scope, first.Namespace, first.Name))
			} else {
				oldest[cfg.Namespace] = cfg
			}
		}
	})
	providers := extAuthzProviders(in.mesh)
	eachPolicy(in.ap, func(cfg *config.Config) {
		spec, ok := cfg.Spec.(*security.AuthorizationPolicy)
		if !ok {
			return
		}
		if spec.GetAction() == security.AuthorizationPolicy_CUSTOM {
			if pp, bad := customProviderProblem(cfg, spec.GetProvider().GetName(), providers, in.mesh); bad {
				out = append(out, pp)
			}
		}
		for i, r := range spec.GetRules() {
			for j, w := range r.GetWhen() {
				if !SupportedConditionKey(w.GetKey()) {
					out = append(out, policyProblem(PolicyCheckUnsupportedKey, cfg, fmt.Sprintf("spec.rules[%d].when[%d].key", i, j),
						"when key %q is not an attribute Istio supports: Istio drops rule %d, which then matches nothing", w.GetKey(), i))
				}
			}
		}
	})
	return out
}

// extAuthzProviders are the names of the mesh's envoyExtAuthzHttp and
// envoyExtAuthzGrpc extension providers.
func extAuthzProviders(m *meshconfig.MeshConfig) map[string]bool {
	out := map[string]bool{}
	for _, p := range m.GetExtensionProviders() {
		switch p.GetProvider().(type) {
		case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp, *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc:
			out[p.GetName()] = true
		}
	}
	return out
}

func customProviderProblem(cfg *config.Config, name string, providers map[string]bool, m *meshconfig.MeshConfig) (PolicyProblem, bool) {
	const effect = "the workloads it selects deny what its rules match"
	if providers[name] {
		return PolicyProblem{}, false
	}
	if name == "" {
		return policyProblem(PolicyCheckUnknownProvider, cfg, "spec.provider.name",
			"a CUSTOM AuthorizationPolicy names no provider: %s", effect), true
	}
	for _, p := range m.GetExtensionProviders() {
		if p.GetName() == name {
			return policyProblem(PolicyCheckUnknownProvider, cfg, "spec.provider.name",
				"extension provider %q is not an envoyExtAuthzHttp or envoyExtAuthzGrpc provider: %s", name, effect), true
		}
	}
	return policyProblem(PolicyCheckUnknownProvider, cfg, "spec.provider.name",
		"mesh config extensionProviders has no provider %q (ext_authz providers: %v): %s",
		name, slices.Sorted(maps.Keys(providers)), effect), true
}

// SupportedConditionKey reports whether Istio 1.31's authorization
// translation knows an AuthorizationPolicy when key (the same set package
// authz translates; a key it does not know drops the rule). Map keys
// (request.headers[...], request.auth.claims[...],
// experimental.envoy.filters.*) are recognised by prefix; their brackets are
// checked when translated.
func SupportedConditionKey(key string) bool {
	switch key {
	case "source.ip", "remote.ip", "source.namespace", "source.principal", "source.serviceAccount",
		"source.trustDomain", "request.auth.principal", "request.auth.audiences", "request.auth.presenter",
		"destination.ip", "destination.port", "connection.sni":
		return true
	}
	for _, prefix := range []string{"request.headers", "request.auth.claims", "experimental.envoy.filters."} {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// workloadPolicyChecks reports the selector policies that match no
// workload of the endpoint index (skipped without one).
func workloadPolicyChecks(in policyCheckInputs, root string) []PolicyProblem {
	if in.eps == nil {
		return nil
	}
	var workloads map[string][]map[string]string // built on first need
	var out []PolicyProblem
	check := func(x *policyIndex) {
		eachPolicy(x, func(cfg *config.Config) {
			sel := selectorOf(cfg.Spec)
			if len(sel) == 0 || len(targetRefsOf(cfg.Spec)) > 0 {
				return
			}
			if _, pa := cfg.Spec.(*security.PeerAuthentication); pa && cfg.Namespace == root {
				return // applies to nothing anyway: PolicyCheckRootSelector
			}
			if workloads == nil {
				workloads = workloadLabels(in.eps)
			}
			where := "in namespace " + cfg.Namespace
			var candidates [][]map[string]string
			if cfg.Namespace == root {
				// a selector policy of the root namespace applies in every namespace
				where = "in any namespace"
				for _, ns := range slices.Sorted(maps.Keys(workloads)) {
					candidates = append(candidates, workloads[ns])
				}
			} else {
				candidates = [][]map[string]string{workloads[cfg.Namespace]}
			}
			for _, ls := range candidates {
				for _, l := range ls {
					if selectorMatches(sel, l) {
						return
					}
				}
			}
			out = append(out, policyProblem(PolicyCheckNoWorkload, cfg, "spec.selector.matchLabels",
				"selector %s matches no workload %s, so the policy applies to nothing (workloads are known from the endpoints of "+
					"services: a workload no service selects is not seen)", formatLabels(sel), where))
		})
	}
	check(in.pa)
	check(in.ra)
	check(in.ap)
	return out
}

// workloadLabels are the distinct label sets of the endpoint index's
// endpoints, by workload namespace.
func workloadLabels(eps *EndpointIndex) map[string][]map[string]string {
	out := map[string][]map[string]string{}
	seen := map[string]bool{}
	for _, byNS := range eps.Snapshot() {
		for svcNS, view := range byNS {
			for _, list := range view.Shards {
				for _, ep := range list {
					ns := ep.Namespace
					if ns == "" {
						ns = svcNS
					}
					key := ns + "\x00" + formatLabels(ep.Labels)
					if !seen[key] {
						seen[key] = true
						out[ns] = append(out[ns], ep.Labels)
					}
				}
			}
		}
	}
	return out
}

// formatLabels renders labels as {k=v,...}, keys sorted.
func formatLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + l[k])
	}
	b.WriteByte('}')
	return b.String()
}
